import os
def test_parts():
    names = sorted(os.listdir("/app/parts"))
    assert names == ["part-000", "part-001", "part-002"]
    text = "".join(open(f"/app/parts/{n}").read() for n in names)
    assert text == "".join(f"{i}\n" for i in range(1, 251))  # /app/big.txt as built
    assert len(open("/app/parts/part-002").read().splitlines()) == 50
