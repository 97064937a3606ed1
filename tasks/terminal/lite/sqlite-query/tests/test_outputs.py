def test_top():
    assert open("/app/top.txt").read().strip() == "Grace"
