def test_cron():
    lines = [l.split() for l in open("/app/crontab") if l.strip() and not l.startswith("#")]
    jobs = {l[5]: l[:5] for l in lines}
    assert jobs["/app/backup.sh"] == ["30", "2", "*", "*", "*"]
    assert jobs["/app/cleanup.sh"][:3] == ["0", "4", "*"] and jobs["/app/cleanup.sh"][3] == "*"
    assert jobs["/app/cleanup.sh"][4] in ("1", "mon", "Mon", "MON")
