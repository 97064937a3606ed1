import subprocess, os
def test_build():
    subprocess.run(["make", "-C", "/app/proj", "clean"], check=True, capture_output=True)
    assert not os.path.exists("/app/proj/app")
    subprocess.run(["make", "-C", "/app/proj"], check=True, capture_output=True)
    assert os.path.exists("/app/proj/main.o") and os.path.exists("/app/proj/util.o")
    assert subprocess.run(["/app/proj/app"], capture_output=True, text=True).stdout == "sum 7\n"
