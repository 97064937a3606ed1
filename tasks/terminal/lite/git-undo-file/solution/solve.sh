#!/bin/bash
set -e
cd /app/repo && git checkout -- data.txt notes.txt
