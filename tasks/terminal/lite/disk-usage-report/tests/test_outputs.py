def test_usage():
    assert open("/app/usage.txt").read().split("\n")[:3] == ["logs 3000", "img 1500", "tmp 10"]
