import configparser
def test_unit():
    c = configparser.ConfigParser(strict=False, interpolation=None); c.optionxform = str
    c.read("/app/web.service")
    assert c["Unit"]["Description"] == "Web app" and "network.target" in c["Unit"]["After"]
    s = c["Service"]
    assert s["ExecStart"] == "/usr/bin/python3 -m http.server 8080"
    assert s["User"] == "www-data" and s["WorkingDirectory"] == "/srv/www" and s["Restart"] == "on-failure"
    assert c["Install"]["WantedBy"] == "multi-user.target"
