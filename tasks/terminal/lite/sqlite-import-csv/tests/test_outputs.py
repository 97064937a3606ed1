import sqlite3
def test_rows():
    rows = sqlite3.connect("/app/people.db").execute("SELECT name, age FROM people ORDER BY name").fetchall()
    assert rows == [("Ann", 31), ("Bob", 25), ("Cy", 40)]
    assert all(isinstance(a, int) for _, a in rows)
