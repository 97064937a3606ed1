import sqlite3
def test_dedupe():
    c = sqlite3.connect("/app/crm.db")
    assert c.execute("SELECT id FROM contacts ORDER BY id").fetchall() == [(1,), (2,), (4,)]
