import os
def test_backup():
    assert sorted(os.listdir("/app/backup")) == ["a b.txt", "c.txt"]
def test_script_fixed():
    assert "$f" in open("/app/backup.sh").read() or "find" in open("/app/backup.sh").read()
