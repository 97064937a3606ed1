#!/bin/bash
set -e
chmod 700 /app/keys && chmod 600 /app/keys/*
