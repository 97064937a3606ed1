#!/bin/bash
set -e
cd /app/release && find . -type f | sed 's,^\./,,' | sort | xargs sha256sum > /app/SHA256SUMS
