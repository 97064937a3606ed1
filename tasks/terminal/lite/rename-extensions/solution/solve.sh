#!/bin/bash
set -e
cd /app/photos && for f in *.JPEG *.jpeg; do [ -e "$f" ] && mv "$f" "${f%.*}.jpg"; done; true
