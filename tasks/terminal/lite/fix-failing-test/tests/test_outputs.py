import subprocess, hashlib
def test_suite_passes():
    r = subprocess.run(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "/app/test_textutil.py"], capture_output=True, text=True, cwd="/app")
    assert r.returncode == 0, r.stdout
def test_tests_untouched():
    assert "slugify('Hello, World!') == 'hello-world'" in open("/app/test_textutil.py").read()
