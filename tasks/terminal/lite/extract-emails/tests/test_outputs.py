def test_emails():
    assert open("/app/emails.txt").read().split() == ["alice@example.com", "bob.smith@corp.org", "carol+x@mail.net"]
