import subprocess, os
AGENT = {"user": "agent", "group": "agent", "extra_groups": [],
         "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/agent", "LANG": "C.UTF-8"}}
"""Code the agent wrote runs as the unprivileged agent, never as root: it cannot write the
verifier's reward file nor signal or trace the verifier."""


def test_build():
    subprocess.run(["make", "-C", "/app/proj", "clean"], check=True, capture_output=True, **AGENT)
    assert not os.path.exists("/app/proj/app")
    subprocess.run(["make", "-C", "/app/proj"], check=True, capture_output=True, **AGENT)
    assert os.path.exists("/app/proj/main.o") and os.path.exists("/app/proj/util.o")
    assert subprocess.run(["/app/proj/app"], capture_output=True, text=True, **AGENT).stdout == "sum 7\n"
