#!/bin/bash
set -e
find /app/bin -name '*.sh' -exec chmod a+x {} +
