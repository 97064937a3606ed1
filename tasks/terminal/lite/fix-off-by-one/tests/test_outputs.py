import subprocess
def test_mean():
    out = subprocess.run(["python3", "/app/mean.py", "1", "2", "3", "4"], capture_output=True, text=True).stdout
    assert out.strip() == "2.5"
    out = subprocess.run(["python3", "/app/mean.py", "10"], capture_output=True, text=True).stdout
    assert out.strip() == "10.0"
