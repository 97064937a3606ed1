import subprocess
AGENT = {"user": "agent", "group": "agent", "extra_groups": [],
         "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/agent", "LANG": "C.UTF-8"}}
"""Code the agent wrote runs as the unprivileged agent, never as root: it cannot write the
verifier's reward file nor signal or trace the verifier."""

SCRIPT = 'printf %s "$1" > /app/input.txt || exit 99; exec bash /app/check.sh'


def check(text):
    """check.sh's exit status on an input holding `text` (written and run as the agent)."""
    return subprocess.run(["bash", "-c", SCRIPT, "check", text], cwd="/app", **AGENT).returncode


def test_detects_error():
    assert check("line\nERROR here\n") == 1  # the task's input


def test_clean_input():
    assert check("all good\n") == 0
