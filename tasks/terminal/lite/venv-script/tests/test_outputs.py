import subprocess
AGENT = {"user": "agent", "group": "agent", "extra_groups": [],
         "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/agent", "LANG": "C.UTF-8"}}
"""Code the agent wrote runs as the unprivileged agent, never as root: it cannot write the
verifier's reward file nor signal or trace the verifier."""


def test_venv():
    out = subprocess.run(["/app/venv/bin/python", "-c", "import calc; print(calc.double(4))"], capture_output=True, text=True, cwd="/", **AGENT)
    assert out.stdout.strip() == "8", out.stderr
