def test_ini():
    import configparser
    c = configparser.ConfigParser(); c.read("/app/settings.ini")
    assert c["network"]["timeout"] == "30" and c["cache"]["timeout"] == "5"
    assert c["network"]["host"] == "example.org"
