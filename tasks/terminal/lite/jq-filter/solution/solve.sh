#!/bin/bash
set -e
jq '[.[] | select(.level == "error") | .id]' /app/events.json > /app/errors.json
