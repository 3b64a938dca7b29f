"""``magdash compact``: give back the space DuckDB freed inside the store's file."""

from __future__ import annotations

import argparse

from magdash.cli.common import add_store_option, open_store


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "compact",
        help="rewrite the store's file without the space freed inside it (the vectors in its shards are untouched)",
    )
    add_store_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = open_store(args)
    before, after = store.compact()
    print(f"store {store.path}: {before / 1e6:,.1f} MB -> {after / 1e6:,.1f} MB")
    return 0
