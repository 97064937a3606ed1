import subprocess
AGENT = {"user": "agent", "group": "agent", "extra_groups": [],
         "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/agent", "LANG": "C.UTF-8"}}
"""Code the agent wrote runs as the unprivileged agent, never as root: it cannot write the
verifier's reward file nor signal or trace the verifier."""


def git(*a):
    return subprocess.run(["git", "-c", "safe.directory=*", "-c", "core.fsmonitor=false", "-C", "/app/repo", *a], capture_output=True, text=True, **AGENT)


def test_merged():
    assert git("rev-parse", "--abbrev-ref", "HEAD").stdout.strip() == "main"
    assert git("merge-base", "--is-ancestor", "feature", "main").returncode == 0
    assert len(git("log", "-1", "--format=%P").stdout.split()) == 2
    assert open("/app/repo/f.txt").read() == "feature\n" and open("/app/repo/m.txt").read() == "main\n"
