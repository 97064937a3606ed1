import tarfile
def test_archive():
    names = sorted(tarfile.open("/app/release.tar.gz").getnames())
    assert "myapp-1.2/README" in names and "myapp-1.2/lib/core.py" in names
    assert not any(n.endswith(".pyc") or "/.git" in n for n in names)
    assert all(n.startswith("myapp-1.2") for n in names)
