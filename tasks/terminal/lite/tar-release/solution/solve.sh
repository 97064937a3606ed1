#!/bin/bash
set -e
cd /app && tar --exclude='*.pyc' --exclude='.git' --transform 's,^myapp,myapp-1.2,' -czf release.tar.gz myapp
