import subprocess
def git(*a):
    return subprocess.run(["git", "-c", "safe.directory=*", "-C", "/app/repo", *a], capture_output=True, text=True).stdout.strip()
def test_merged():
    assert git("rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git("merge-base", "--is-ancestor", "feature", "main") == "" 
    assert subprocess.run(["git", "-c", "safe.directory=*", "-C", "/app/repo", "merge-base", "--is-ancestor", "feature", "main"]).returncode == 0
    assert len(git("log", "-1", "--format=%P").split()) == 2
    assert open("/app/repo/f.txt").read() == "feature\n" and open("/app/repo/m.txt").read() == "main\n"
