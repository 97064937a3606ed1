import subprocess, shutil
def test_detects_error():
    assert subprocess.run(["bash", "/app/check.sh"]).returncode == 1
def test_clean_input(tmp_path):
    shutil.copy("/app/input.txt", tmp_path / "keep")
    open("/app/input.txt", "w").write("all good\n")
    try:
        assert subprocess.run(["bash", "/app/check.sh"]).returncode == 0
    finally:
        shutil.copy(tmp_path / "keep", "/app/input.txt")
