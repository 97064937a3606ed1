#!/bin/bash
set -e
python3 -m venv /app/venv && /app/venv/bin/python -m pip install --no-index --no-build-isolation /app/calc 2>&1 | tail -2 || (cp -r /app/calc/calc /app/venv/lib/python3*/site-packages/)
