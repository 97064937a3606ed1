import subprocess
def test_hash():
    want = subprocess.run(["git", "-c", "safe.directory=*", "-C", "/app/repo", "log", "--format=%H", "--grep", "tweak 3"], capture_output=True, text=True).stdout.strip()
    assert open("/app/culprit.txt").read().strip() == want and len(want) == 40
