import os
def test_names():
    assert sorted(os.listdir("/app/photos")) == ["a.jpg", "b.jpg", "c.png", "d.jpg", "notes.txt"]
def test_content_kept():
    assert open("/app/photos/b.jpg").read() == "B"
