#!/bin/bash
set -e
cd /app/src && sed -i 's/^LDLIBS *=.*/LDLIBS = -lm/' Makefile && make
