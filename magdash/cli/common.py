"""Options and helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from magdash.jsonio import to_jsonable


def add_store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="PATH",
        default=None,
        help="DuckDB store file (default: $MAGDASH_STORE or cache/magdash.duckdb)",
    )


def open_store(args: argparse.Namespace):
    from magdash.store import Store

    return Store(args.store)


def print_json(payload: Any) -> None:
    json.dump(to_jsonable(payload), sys.stdout, allow_nan=False, indent=2)
    sys.stdout.write("\n")
