#!/bin/bash
set -e
cat /app/inbox/* | grep -oiE '[a-z0-9._+-]+@[a-z0-9.-]+\.[a-z]+' | tr 'A-Z' 'a-z' | sort -u > /app/emails.txt
