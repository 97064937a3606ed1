import os
def test_list():
    assert open("/app/ww.txt").read().split() == ["/app/site/cache/x.tmp", "/app/site/index.html"]
def test_fixed():
    for root, dirs, files in os.walk("/app/site"):
        for f in files:
            assert os.stat(os.path.join(root, f)).st_mode & 0o002 == 0
