def test_unique():
    assert open("/app/unique.txt").read() == "pear\napple\nfig\nkiwi\n"
