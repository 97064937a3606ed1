import collections, re

PRISTINE = "The cat and the dog. The DOG barked; a cat ran!\nAnd then the bird sang, and sang.\n"
"""/app/text.txt as the task gave it: the expected counts never come from a file the agent can
change."""


def test_counts():
    words = re.findall(r"[a-z]+", PRISTINE.lower())
    c = collections.Counter(words)
    want = [f"{w} {n}" for w, n in sorted(c.items(), key=lambda x: (-x[1], x[0]))]
    assert open("/app/counts.txt").read().split("\n")[:len(want)] == want
