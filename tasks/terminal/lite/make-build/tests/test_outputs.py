import subprocess
AGENT = {"user": "agent", "group": "agent", "extra_groups": [],
         "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/agent", "LANG": "C.UTF-8"}}
"""Code the agent wrote runs as the unprivileged agent, never as root: it cannot write the
verifier's reward file nor signal or trace the verifier."""


def test_binary():
    out = subprocess.run(["/app/src/hyp", "3", "4"], capture_output=True, text=True, **AGENT).stdout
    assert out.strip() == "5.00"
def test_make_clean_rebuild():
    subprocess.run(["make", "-C", "/app/src", "clean"], check=True, capture_output=True, **AGENT)
    subprocess.run(["make", "-C", "/app/src"], check=True, capture_output=True, **AGENT)
    out = subprocess.run(["/app/src/hyp", "6", "8"], capture_output=True, text=True, **AGENT).stdout
    assert out.strip() == "10.00"
