#!/bin/bash
set -e
grep 'Failed password' /app/auth.log | grep -oE 'from [0-9.]+' | awk '{print $2}' | sort | uniq -c | awk '$1>=3{print $2, $1}' | sort -k2,2nr > /app/offenders.txt
