import subprocess
def test_binary():
    out = subprocess.run(["/app/src/hyp", "3", "4"], capture_output=True, text=True).stdout
    assert out.strip() == "5.00"
def test_make_clean_rebuild():
    subprocess.run(["make", "-C", "/app/src", "clean"], check=True, capture_output=True)
    subprocess.run(["make", "-C", "/app/src"], check=True, capture_output=True)
