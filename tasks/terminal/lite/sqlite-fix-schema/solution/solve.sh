#!/bin/bash
set -e
sqlite3 /app/app.db "ALTER TABLE users ADD COLUMN active INTEGER NOT NULL DEFAULT 1; UPDATE users SET active = 0 WHERE last_login < '2024-01-01';"
