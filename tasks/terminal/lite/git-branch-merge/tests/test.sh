#!/bin/bash
# Terminal-Bench 2 verifier: pytest on the fresh tests, reward 1 iff every test passes.
mkdir -p /logs/verifier
cd /tests
python3 -P -m pytest -q -p no:cacheprovider -rA /tests/test_outputs.py
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
