#!/bin/bash
set -e
python3 -c "import json,csv,sys; w=csv.writer(open('/app/users.csv','w',newline='')); w.writerow(['id','name','email']); [w.writerow([u['id'],u['name'],u['email']]) for u in json.load(open('/app/users.json'))]"
