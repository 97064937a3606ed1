#!/bin/bash
set -e
sed -i "s/return '-'.join(words)/return '-'.join(w.lower() for w in words)/" /app/textutil.py
