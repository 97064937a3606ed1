#!/bin/bash
set -e
mkdir -p /app/parts && split -l 100 -d -a 3 /app/big.txt /app/parts/part-
