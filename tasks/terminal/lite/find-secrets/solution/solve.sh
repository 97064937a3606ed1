#!/bin/bash
set -e
cd /app/project && grep -rlE 'AKIA[A-Z0-9]{16}' . | sed 's,^\./,,' | sort > /app/leaks.txt
