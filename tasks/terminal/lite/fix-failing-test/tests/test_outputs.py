import json, subprocess
AGENT = {"user": "agent", "group": "agent", "extra_groups": [],
         "env": {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/agent", "LANG": "C.UTF-8"}}
"""Code the agent wrote runs as the unprivileged agent, never as root: it cannot write the
verifier's reward file nor signal or trace the verifier."""

PRISTINE = """from textutil import slugify

def test_basic():
    assert slugify('Hello, World!') == 'hello-world'

def test_digits():
    assert slugify('a 1 B') == 'a-1-b'
"""
CASES = {"Hello, World!": "hello-world", "a 1 B": "a-1-b", "Big  Red DOG": "big-red-dog"}


def test_suite_passes():
    r = subprocess.run(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "/app/test_textutil.py"], capture_output=True, text=True, cwd="/app",
                       **AGENT)
    assert r.returncode == 0, r.stdout
    # the exit status is the agent's code's to choose: the answers are read here
    r = subprocess.run(["python3", "-c", "import json, sys, textutil; print(json.dumps("
                        "[textutil.slugify(s) for s in json.loads(sys.argv[1])]))",
                        json.dumps(list(CASES))], capture_output=True, text=True, cwd="/app",
                       **AGENT)
    assert r.stdout.strip().splitlines()[-1:] == [json.dumps(list(CASES.values()))], r.stderr


def test_tests_untouched():
    assert open("/app/test_textutil.py").read() == PRISTINE
