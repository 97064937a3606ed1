import json
def test_ids():
    assert json.load(open("/app/errors.json")) == [2, 5]
