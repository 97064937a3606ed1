import csv
def test_csv():
    rows = list(csv.reader(open("/app/users.csv")))
    assert rows == [["id", "name", "email"], ["1", "Ann", "ann@x.org"], ["2", "Bo, Jr.", "bo@y.org"]]
