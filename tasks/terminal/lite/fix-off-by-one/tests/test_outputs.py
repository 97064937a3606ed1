import subprocess
AGENT = {"user": "agent", "group": "agent", "extra_groups": [],
         "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/agent", "LANG": "C.UTF-8"}}
"""Code the agent wrote runs as the unprivileged agent, never as root: it cannot write the
verifier's reward file nor signal or trace the verifier."""


def test_mean():
    out = subprocess.run(["python3", "/app/mean.py", "1", "2", "3", "4"], capture_output=True, text=True, **AGENT).stdout
    assert out.strip() == "2.5"
    out = subprocess.run(["python3", "/app/mean.py", "10"], capture_output=True, text=True, **AGENT).stdout
    assert out.strip() == "10.0"
