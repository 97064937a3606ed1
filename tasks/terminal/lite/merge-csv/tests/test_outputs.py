import csv
def test_join():
    rows = list(csv.reader(open("/app/report.csv")))
    assert rows == [["order_id", "customer_name", "total"], ["1", "Ada", "9.5"], ["3", "Bob", "4"], ["4", "Ada", "1"]]
