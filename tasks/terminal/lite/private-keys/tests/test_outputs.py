import os
def test_modes():
    assert os.stat("/app/keys").st_mode & 0o777 == 0o700
    assert sorted(os.listdir("/app/keys")) == ["id_ed25519", "id_rsa"]  # every key kept
    for f in os.listdir("/app/keys"):
        assert os.stat(f"/app/keys/{f}").st_mode & 0o777 == 0o600
