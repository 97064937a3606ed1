#!/bin/bash
set -e
sqlite3 /app/crm.db 'DELETE FROM contacts WHERE id NOT IN (SELECT MIN(id) FROM contacts GROUP BY lower(email));'
