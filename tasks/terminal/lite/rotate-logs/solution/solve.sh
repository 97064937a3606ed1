#!/bin/bash
set -e
cd /app/logs && for f in *.log; do [ "$f" = current.log ] || gzip "$f"; done && : > current.log
