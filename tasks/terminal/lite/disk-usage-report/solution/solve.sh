#!/bin/bash
set -e
cd /app/data && for d in */; do echo "${d%/} $(find "$d" -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}')"; done | sort -k2,2nr > /app/usage.txt
