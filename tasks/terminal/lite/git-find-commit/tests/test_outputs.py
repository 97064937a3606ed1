def test_hash():
    # the commit that added DEBUG = True: the history is built with fixed dates, so its hash is
    # known here and never read from the agent's repository
    assert open("/app/culprit.txt").read().strip() == "8891cc6191a32937a16f7f7d4c57f6fb50087ebf"
