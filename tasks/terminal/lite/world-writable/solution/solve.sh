#!/bin/bash
set -e
find /app/site -type f -perm -o+w | sort > /app/ww.txt && xargs chmod o-w < /app/ww.txt
