#!/bin/bash
set -e
sqlite3 /app/logs.db 'CREATE INDEX idx_events_user ON events(user_id);'
