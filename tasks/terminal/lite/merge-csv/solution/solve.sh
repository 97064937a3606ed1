#!/bin/bash
set -e
python3 - <<'EOF'
import csv
names = {r['customer_id']: r['name'] for r in csv.DictReader(open('/app/customers.csv'))}
rows = sorted((r for r in csv.DictReader(open('/app/orders.csv')) if r['customer_id'] in names), key=lambda r: int(r['order_id']))
w = csv.writer(open('/app/report.csv', 'w', newline=''))
w.writerow(['order_id', 'customer_name', 'total'])
for r in rows:
    w.writerow([r['order_id'], names[r['customer_id']], r['total']])
EOF
