import os
def test_modes():
    assert os.stat("/app/keys").st_mode & 0o777 == 0o700
    for f in os.listdir("/app/keys"):
        assert os.stat(f"/app/keys/{f}").st_mode & 0o777 == 0o600
