import subprocess
def git(*a):
    return subprocess.run(["git", "-c", "safe.directory=*", "-C", "/app/repo", *a], capture_output=True, text=True).stdout
def test_clean():
    assert git("status", "--porcelain") == ""
def test_message():
    assert git("log", "-1", "--format=%s").strip() == "Add feature"
    assert "new.txt" in git("show", "--name-only", "--format=")
