#!/bin/bash
set -e
awk '$1 >= "2024-03-01T10:00:00" && $1 <= "2024-03-01T10:30:00"' /app/app.log > /app/window.log
