def test_counts():
    import re, collections
    words = re.findall(r"[a-z]+", open("/app/text.txt").read().lower())
    c = collections.Counter(words)
    want = [f"{w} {n}" for w, n in sorted(c.items(), key=lambda x: (-x[1], x[0]))]
    assert open("/app/counts.txt").read().split("\n")[:len(want)] == want
