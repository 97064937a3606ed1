#!/bin/bash
set -e
python3 -c "import csv,sqlite3; c=sqlite3.connect('/app/people.db'); c.execute('CREATE TABLE people(name TEXT, age INTEGER)'); c.executemany('INSERT INTO people VALUES (?,?)', [(r['name'], int(r['age'])) for r in csv.DictReader(open('/app/people.csv'))]); c.commit()"
