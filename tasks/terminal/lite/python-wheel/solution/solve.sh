#!/bin/bash
set -e
cd /app/pkg && python3 -m pip wheel --no-deps --no-build-isolation --no-index -w /app/dist .
