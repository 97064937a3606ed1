import glob, zipfile
def test_wheel():
    wheels = glob.glob("/app/dist/greet-0.1.0-*.whl")
    assert len(wheels) == 1
    assert "greet/__init__.py" in zipfile.ZipFile(wheels[0]).namelist()
