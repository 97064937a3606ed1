#!/bin/bash
mkdir -p /app/backup
for f in $(ls /app/docs/*.txt); do cp $f /app/backup/; done
