#!/bin/bash
grep -q ERROR /app/input.txt | true
exit 0
