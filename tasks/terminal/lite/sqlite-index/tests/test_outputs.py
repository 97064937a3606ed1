import sqlite3
def test_plan():
    c = sqlite3.connect("/app/logs.db")
    plan = " ".join(r[-1] for r in c.execute("EXPLAIN QUERY PLAN SELECT * FROM events WHERE user_id = 5"))
    assert "idx_events_user" in plan
    assert c.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 200
