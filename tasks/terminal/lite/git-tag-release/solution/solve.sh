#!/bin/bash
set -e
cd /app/repo && git -c user.email=a@b -c user.name=A tag -a v1.0 -m 'Release 1.0' $(git log --format=%H --grep='^prepare release$')
