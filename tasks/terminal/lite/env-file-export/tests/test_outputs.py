import subprocess
def test_run():
    out = subprocess.run(["/app/run.sh"], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "db.local 5432", out.stderr
