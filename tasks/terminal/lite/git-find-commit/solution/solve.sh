#!/bin/bash
set -e
cd /app/repo && git log -S 'DEBUG = True' --format=%H -- config.py | tail -1 > /app/culprit.txt
