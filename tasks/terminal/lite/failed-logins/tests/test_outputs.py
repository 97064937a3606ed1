def test_offenders():
    assert open("/app/offenders.txt").read().split("\n")[:2] == ["10.0.0.5 4", "192.168.1.9 3"]
    assert "10.0.0.7" not in open("/app/offenders.txt").read()
