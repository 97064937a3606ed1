import subprocess
AGENT = {"user": "agent", "group": "agent", "extra_groups": [],
         "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/agent", "LANG": "C.UTF-8"}}
"""Code the agent wrote runs as the unprivileged agent, never as root: it cannot write the
verifier's reward file nor signal or trace the verifier."""


def git(*a):
    return subprocess.run(["git", "-c", "safe.directory=*", "-c", "core.fsmonitor=false", "-C", "/app/repo", *a], capture_output=True, text=True, **AGENT)


def test_clean():
    r = git("status", "--porcelain")
    assert r.returncode == 0 and r.stdout == ""
def test_message():
    assert git("log", "-1", "--format=%s").stdout.strip() == "Add feature"
    assert "new.txt" in git("show", "--name-only", "--format=").stdout
