"""``magdash export`` and ``magdash import``: the reference npz layout in and out."""

from __future__ import annotations

import argparse
import os

import numpy as np

from magdash.cli.common import add_store_option, check_name, open_store
from magdash.errors import StoreError


def register(subparsers) -> None:
    export = subparsers.add_parser("export", help="write a model's vectors to an .npz (reference layout)")
    export.add_argument("--model", required=True)
    export.add_argument("--stimuli", default=None)
    export.add_argument("--out", required=True, metavar="FILE.npz")
    add_store_option(export)
    export.set_defaults(func=run_export)

    imported = subparsers.add_parser("import", help="store hidden states from an .npz as a model")
    imported.add_argument("file", metavar="FILE.npz")
    imported.add_argument("--name", required=True, help="model name in the store")
    imported.add_argument("--stimuli", default=None, help="stimulus set name (default: paper if it matches, else NAME-stimuli)")
    add_store_option(imported)
    imported.set_defaults(func=run_import)


def run_export(args: argparse.Namespace) -> int:
    store = open_store(args)
    stimuli = store.resolve_stimuli(args.model, args.stimuli)
    arrays = store.export_arrays(args.model, stimuli)
    target = args.out if args.out.endswith(".npz") else args.out + ".npz"
    try:
        np.savez(target, **arrays)
    except OSError as error:
        raise StoreError(f"cannot write {target!r}: {error.strerror}") from None
    shape = "x".join(map(str, arrays["per_carrier"].shape))
    print(f"wrote {target}: per_carrier {shape} ({os.path.getsize(target) / 1e6:.1f} MB)")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from magdash.store import read_npz

    check_name(args.name, "--name", "llama3-8b")
    check_name(args.stimuli, "--stimuli", "my-stimuli")
    arrays = read_npz(args.file)
    store = open_store(args)
    record, stimuli = store.import_arrays(
        args.name, arrays["per_carrier"], arrays["magnitudes"],
        carriers=arrays.get("carriers"), layer_labels=arrays.get("layer_labels"),
        stimuli=args.stimuli, source=f"import:{os.path.basename(args.file)}",
    )
    print(f"imported {args.file} as {record.name!r} (stimulus set {stimuli!r}, {record.n_layers} layers, d={record.hidden_size})")
    return 0
