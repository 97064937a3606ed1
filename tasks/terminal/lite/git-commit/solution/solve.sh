#!/bin/bash
set -e
cd /app/repo && git add -A && git -c user.email=a@b -c user.name=A commit -qm 'Add feature'
