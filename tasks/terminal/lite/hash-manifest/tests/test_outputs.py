import subprocess
def test_manifest():
    r = subprocess.run("cd /app/release && sha256sum -c ../SHA256SUMS", shell=True, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    paths = [l.split("  ", 1)[1] for l in open("/app/SHA256SUMS").read().splitlines()]
    assert paths == ["bin/tool", "lib/a.so", "readme"]
