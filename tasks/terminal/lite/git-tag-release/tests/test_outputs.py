import subprocess
AGENT = {"user": "agent", "group": "agent", "extra_groups": [],
         "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/agent", "LANG": "C.UTF-8"}}
"""Code the agent wrote runs as the unprivileged agent, never as root: it cannot write the
verifier's reward file nor signal or trace the verifier."""


def git(*a):
    return subprocess.run(["git", "-c", "safe.directory=*", "-c", "core.fsmonitor=false", "-C", "/app/repo", *a], capture_output=True, text=True, **AGENT)


def test_tag():
    assert git("cat-file", "-t", "v1.0").stdout.strip() == "tag"
    assert git("log", "-1", "--format=%s", "v1.0^{commit}").stdout.strip() == "prepare release"
    assert git("tag", "-l", "--format=%(contents:subject)", "v1.0").stdout.strip() == "Release 1.0"
