#!/bin/bash
set -e
printf '30 2 * * * /app/backup.sh\n0 4 * * 1 /app/cleanup.sh\n' > /app/crontab
