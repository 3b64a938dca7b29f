#!/usr/bin/env bash
# Set up a virtual environment from requirements-dev.txt and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -r requirements-dev.txt
.venv/bin/python -m pytest -q "$@"
