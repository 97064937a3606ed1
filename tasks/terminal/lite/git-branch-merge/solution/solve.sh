#!/bin/bash
set -e
cd /app/repo && git checkout -q main && git -c user.email=a@b -c user.name=A merge --no-ff -q -m 'Merge feature' feature
