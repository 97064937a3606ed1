def test_leaks():
    assert open("/app/leaks.txt").read().split() == ["config/prod.env", "src/deploy.py"]
