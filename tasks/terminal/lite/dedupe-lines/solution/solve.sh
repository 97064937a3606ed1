#!/bin/bash
set -e
awk '!seen[$0]++' /app/list.txt > /app/unique.txt
