import subprocess
def test_runs():
    out = subprocess.run(["python3", "/app/main.py"], capture_output=True, text=True, cwd="/app")
    assert out.stdout.strip() == "area 12", out.stderr
