import subprocess
AGENT = {"user": "agent", "group": "agent", "extra_groups": [],
         "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/agent", "LANG": "C.UTF-8"}}
"""Code the agent wrote runs as the unprivileged agent, never as root: it cannot write the
verifier's reward file nor signal or trace the verifier."""


def test_runs():
    out = subprocess.run(["python3", "/app/main.py"], capture_output=True, text=True, cwd="/app", **AGENT)
    assert out.stdout.strip() == "area 12", out.stderr
