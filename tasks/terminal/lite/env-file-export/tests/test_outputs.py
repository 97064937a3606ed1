import subprocess
AGENT = {"user": "agent", "group": "agent", "extra_groups": [],
         "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/agent", "LANG": "C.UTF-8"}}
"""Code the agent wrote runs as the unprivileged agent, never as root: it cannot write the
verifier's reward file nor signal or trace the verifier."""


def test_run():
    env = {**AGENT["env"], "PATH": "/usr/bin:/bin"}
    out = subprocess.run(["/app/run.sh"], capture_output=True, text=True, **{**AGENT, "env": env})
    assert out.stdout.strip() == "db.local 5432", out.stderr
