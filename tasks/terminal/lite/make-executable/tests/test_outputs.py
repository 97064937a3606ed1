import os, stat
def test_modes():
    for name in ("a.sh", "sub/b.sh"):
        assert os.stat(f"/app/bin/{name}").st_mode & 0o111 == 0o111
    assert os.stat("/app/bin/readme.txt").st_mode & 0o111 == 0
