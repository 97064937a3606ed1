import subprocess
def test_restored():
    assert open("/app/repo/data.txt").read() == "important\n"
    assert open("/app/repo/notes.txt").read() == "notes\n"
    assert open("/app/repo/todo.txt").read() == "todo\nmore\n"
