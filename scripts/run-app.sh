#!/usr/bin/env bash
# Set up a virtual environment from requirements.txt and start the dashboard.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -r requirements.txt
exec .venv/bin/streamlit run app.py "$@"
