#!/usr/bin/env bash
# The wheels bench/gpu_check.py needs on the GPU machine, downloaded here, on a connected machine.
#
# The GPU machine has Python 3.12 (x86-64, glibc Linux) with PyTorch, transformers, accelerate,
# numpy, pandas, pyarrow and scipy, and no network. magdash's extraction and phase path imports
# two packages more: duckdb (the store) and diptest (the dip test of the Omega distributions).
# This puts their CPython 3.12 manylinux x86_64 wheels, at the versions of the Python running
# this script (else the pins below), into bench/wheels/ (ignored by git), which the device tool
# carries (`carry: ["bench/wheels"]`). Neither has a dependency the GPU machine lacks (diptest
# needs numpy). See bench/README.md for the command that installs them there and runs the check.
#
#   bash bench/gpu_wheels.sh            # PYTHON=... to use another interpreter's pip and versions
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
DEST=bench/wheels

installed() {  # the version of $1 installed for $PYTHON, else $2
    "$PYTHON" -c "from importlib.metadata import version; print(version('$1'))" 2>/dev/null || echo "$2"
}
PACKAGES=("duckdb==$(installed duckdb 1.4.1)" "diptest==$(installed diptest 0.10.0)")

rm -rf "$DEST"
mkdir -p "$DEST"
# pip matches manylinux tags exactly: every tag a wheel of these packages is published under.
"$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --dest "$DEST" \
    --python-version 3.12 --implementation cp --abi cp312 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    "${PACKAGES[@]}"
ls -l "$DEST"
du -sh "$DEST"
