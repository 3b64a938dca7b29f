"""``magdash list``: what the store holds and which models can be used."""

from __future__ import annotations

import argparse

from magdash.cli.common import add_store_option, open_store, print_json


def register(subparsers) -> None:
    parser = subparsers.add_parser("list", help="list stored models, stimulus sets and available models")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_store_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from magdash.sources.builtin import BUILTIN_MODELS
    from magdash.sources.hf_cache import cached_repo_ids

    store = open_store(args)
    with store.session():
        models = store.list_models()
        progress = store.extraction_progress()
        formats = store.number_formats()
        sets = list(formats)
    available = {"builtin": list(BUILTIN_MODELS), "huggingface_cache": cached_repo_ids()}
    if args.json:
        print_json({
            "store": str(store.path),
            "models": models[["name", "source", "architecture", "n_blocks", "hidden_size", "dtype", "position",
                              "is_random", "fingerprint", "stimulus_sets", "nonfinite_layers", "splits_digits"]]
            .to_dict("records"),
            "progress": progress.to_dict("records"),
            "stimulus_sets": sets,
            "number_formats": formats,
            "available_models": available,
        })
        return 0
    print(f"store: {store.path}")
    if models.empty:
        print("stored models: none yet (try: python -m magdash extract --model minilm)")
    else:
        print("stored models:")
        for row in models.itertuples():
            print(f"  {row.name:30s} {row.architecture:24s} {row.n_blocks:3d} blocks  d={row.hidden_size:<5d} "
                  f"{row.dtype:9s} sets: {row.stimulus_sets or '-'}")
            splits = {"yes": "splits every digit", "partly": "splits some digits", "no": "keeps numbers whole",
                      "": "digit splitting not recorded (extract again to record it)"}[str(row.splits_digits)]
            print(f"  {'':30s} tokenizer: {splits}")
            if row.nonfinite_layers:
                print(f"  {'':30s} Inf/NaN vectors at layers {row.nonfinite_layers}: left out of every fit")
        partial = progress[progress["done"] < progress["total"]]
        for row in partial.itertuples():
            print(f"  unfinished: {row.name} / {row.set_name}: {row.done} of {row.total} (run extract again)")
    print("stimulus sets: " + (", ".join(
        name if number_format == "digits" else f"{name} ({number_format})" for name, number_format in formats.items()
    ) or "none yet"))
    print(f"built-in models: {', '.join(available['builtin'])} (append @random for the untrained control)")
    cached = available["huggingface_cache"]
    print(f"Hugging Face cache: {', '.join(cached) if cached else 'no models found'}")
    return 0
