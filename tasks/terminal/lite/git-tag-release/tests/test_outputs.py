import subprocess
def git(*a):
    return subprocess.run(["git", "-c", "safe.directory=*", "-C", "/app/repo", *a], capture_output=True, text=True).stdout.strip()
def test_tag():
    assert git("cat-file", "-t", "v1.0") == "tag"
    assert git("log", "-1", "--format=%s", "v1.0^{commit}") == "prepare release"
    assert git("tag", "-l", "--format=%(contents:subject)", "v1.0") == "Release 1.0"
