"""``magdash export`` and ``magdash import``: the reference npz layout and Parquet folders in and out."""

from __future__ import annotations

import argparse
import os

import numpy as np

from magdash.cli.common import add_store_option, check_name, open_store
from magdash.errors import MagdashError
from magdash.layers import LAST_LAYER_CHOICES
from magdash.output_files import check_output_path, is_npz_export, write_output


def register(subparsers) -> None:
    export = subparsers.add_parser(
        "export", help="write a model's vectors to an .npz (reference layout) or a folder of Parquet files",
    )
    export.add_argument("--model", required=True)
    export.add_argument("--stimuli", default=None)
    export.add_argument("--out", required=True, metavar="FILE.npz|DIR",
                        help="the .npz file (written exactly there), or with --format parquet a new or empty folder")
    export.add_argument(
        "--format", choices=("npz", "parquet"), default="npz",
        help="parquet: a new folder with one Parquet file per layer and magdash.json (docs: magdash/store/parquet.py)",
    )
    add_store_option(export)
    export.set_defaults(func=run_export)

    imported = subparsers.add_parser(
        "import", help="store hidden states from an .npz or a folder of Parquet layer files as a model",
        description="Store per_carrier (n_magnitudes, n_carriers, n_layers, d) from an .npz, or the layer files of "
        "a folder (magdash export --format parquet, or another tool's layer-000.parquet, ... with magnitude, carrier "
        "and vector columns), as a model. The paper's hidden_states.npz: --magnitudes paper --carriers paper "
        "--last-layer post-norm.",
    )
    imported.add_argument("file", metavar="FILE.npz|DIR")
    imported.add_argument("--name", required=True, help="model name in the store")
    imported.add_argument(
        "--stimuli", default=None,
        help="stimulus set name (default: the set already holding these sentences, paper for the paper's, else NAME-stimuli)",
    )
    imported.add_argument(
        "--magnitudes", metavar="SPEC", default=None,
        help="the magnitudes of per_carrier's rows, ascending (e.g. paper, 1-1000), for a file without 'magnitudes'",
    )
    imported.add_argument(
        "--carriers", metavar="FILE|paper", default=None,
        help="the carrier sentences of per_carrier's columns, for a file without 'carriers': 'paper' or a text file, "
        "one sentence with {n} per line (default: carrier 1 {n}, carrier 2 {n}, ...)",
    )
    imported.add_argument(
        "--last-layer", choices=LAST_LAYER_CHOICES, default="block",
        help="post-norm: the last stored layer is the final norm's output (transformers' hidden_states[-1], as in the "
        "paper's files); it is labelled so and kept out of the default core band",
    )
    add_store_option(imported)
    imported.set_defaults(func=run_import)


def run_export(args: argparse.Namespace) -> int:
    store = open_store(args)
    stimuli = store.resolve_stimuli(args.model, args.stimuli)
    if args.format == "parquet":
        written = store.export_parquet(args.model, stimuli, args.out)
        size = sum(path.stat().st_size for path in written)
        print(f"wrote {args.out}: {len(written) - 1} layer files and magdash.json ({size / 1e6:.1f} MB)")
        return 0
    # Written exactly where --out says (never a name made from it: '<folder>.npz' beside a folder,
    # '/dev/null.npz'); a folder, a device or another's file there is refused.
    target = args.out
    if os.path.isdir(target):
        raise MagdashError(
            f"cannot write the export to {target!r}: it is a folder; give the .npz file's name "
            "(or --format parquet for a new folder of Parquet files)"
        )
    check_output_path(target, what="the export", ours=is_npz_export)  # before the vectors are read
    arrays = store.export_arrays(args.model, stimuli)

    def save(path):
        with open(path, "wb") as handle:  # a file object: savez would add .npz to a temporary name
            np.savez(handle, **arrays)

    write_output(target, save, what="the export", ours=is_npz_export)
    shape = "x".join(map(str, arrays["per_carrier"].shape))
    print(f"wrote {target}: per_carrier {shape} ({os.path.getsize(target) / 1e6:.1f} MB)")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from magdash.formatting import layer_span
    from magdash.stimuli import PAPER_CARRIERS, PAPER_SET_NAME, parse_magnitudes, read_carrier_file
    from magdash.store import import_inputs, read_npz
    from magdash.variability.analysis_params import default_core_layers

    check_name(args.name, "--name", "llama3-8b")
    check_name(args.stimuli, "--stimuli", "my-stimuli")
    magnitudes = None if args.magnitudes is None else parse_magnitudes(args.magnitudes)
    carriers = None
    if args.carriers is not None:
        carriers = list(PAPER_CARRIERS) if args.carriers == PAPER_SET_NAME else read_carrier_file(args.carriers)
    if os.path.isdir(args.file):
        from magdash.store.parquet import read_parquet_folder

        folder = read_parquet_folder(args.file)  # every file checked before the store is opened
        store = open_store(args, create=True)
        record, stimuli = store.import_parquet_folder(
            folder, args.name, stimuli=args.stimuli, carriers=carriers,
            magnitudes=None if magnitudes is None else [int(m) for m in magnitudes], last_layer=args.last_layer,
        )
    else:
        arrays = read_npz(args.file)
        magnitudes, carriers, n_blocks = import_inputs(arrays, magnitudes, carriers)
        store = open_store(args, create=True)
        record, stimuli = store.import_arrays(
            args.name, arrays["per_carrier"], magnitudes,
            carriers=carriers, layer_labels=arrays.get("layer_labels"),
            stimuli=args.stimuli, source=f"import:{os.path.basename(args.file)}",
            n_blocks=n_blocks, last_layer=args.last_layer,
        )
    core = layer_span(default_core_layers(record.n_blocks)) if record.n_blocks >= 2 else "none (fewer than 2 blocks)"
    print(f"imported {args.file} as {record.name!r} (stimulus set {stimuli!r}, {record.n_layers} layers, "
          f"{record.n_blocks} blocks, d={record.hidden_size}; default core layers {core}; "
          f"last layer: {record.layer_labels[-1]})")
    return 0
