#!/bin/sh
# jvmpi-shim real-agent suite: see corpus/README.md
exec python3 "$(dirname "$0")/suite.py" "$@"
