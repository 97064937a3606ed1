import sqlite3
def test_column():
    c = sqlite3.connect("/app/app.db")
    cols = {r[1]: r for r in c.execute("PRAGMA table_info(users)")}
    assert cols["active"][3] == 1
    assert c.execute("SELECT name, active FROM users ORDER BY name").fetchall() == [("a", 0), ("b", 1), ("c", 1)]
