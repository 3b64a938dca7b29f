"""``magdash backfill``: write the metric rows of every cached result that has none."""

from __future__ import annotations

import argparse

from magdash.cli.common import add_store_option, open_store


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "backfill",
        help="fill the SQL metric tables from the results cached before they existed (a migrated store); "
             "otherwise each result gets its rows when it is next read",
    )
    add_store_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from magdash.runs.backfill import backfill_store

    store = open_store(args)
    written = backfill_store(store)
    counted = ", ".join(f"{count} {kind}" for kind, count in written.items() if count) or "none were missing"
    print(f"store {store.path}: metric rows written for cached results: {counted}")
    return 0
