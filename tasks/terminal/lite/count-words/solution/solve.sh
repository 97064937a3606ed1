#!/bin/bash
set -e
tr 'A-Z' 'a-z' < /app/text.txt | grep -oE '[a-z]+' | sort | uniq -c | awk '{print $2, $1}' | sort -k2,2nr -k1,1 > /app/counts.txt
