import subprocess
def test_venv():
    out = subprocess.run(["/app/venv/bin/python", "-c", "import calc; print(calc.double(4))"], capture_output=True, text=True, cwd="/")
    assert out.stdout.strip() == "8", out.stderr
