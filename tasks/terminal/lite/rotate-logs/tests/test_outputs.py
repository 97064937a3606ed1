import gzip, os
def test_rotated():
    names = sorted(os.listdir("/app/logs"))
    assert names == ["a.log.gz", "b.log.gz", "current.log"]
    assert gzip.open("/app/logs/a.log.gz").read() == b"alpha\n"
    assert os.path.getsize("/app/logs/current.log") == 0
