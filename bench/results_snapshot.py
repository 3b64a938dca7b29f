"""Every analysis's numbers on a store, recomputed, as one JSON file: run it before and after a
refactor and compare (``--compare``) to show the results did not change.

Each analysis runs through the public API twice, on the store (``use_cache=False``, so nothing is
read back from the cache) and on the same vectors held in memory as
:class:`magdash.Activations`; every field of each result (dataclasses, arrays, tables) becomes
plain JSON (E5 against the built-in ``openwebtext-500k`` counts). The store is copied first, so the one given is never written.

    python bench/results_snapshot.py --store cache/store.duckdb --out /tmp/before.json
    python bench/results_snapshot.py --compare /tmp/before.json /tmp/after.json

The comparison lists every value that differs by more than ``--rtol`` (relative, 1e-9 by
default, with ``--atol`` for values near 0) and every key found on one side only.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import math
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

MODELS = ("minilm", "smollm2")
N_BOOT = 200


def plain(value: Any) -> Any:
    """A result as JSON-ready data: dataclass fields, arrays, tables and enums, recursively."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, pd.DataFrame):
        return {"columns": [str(c) for c in value.columns], "index": plain(list(value.index)),
                "data": plain(value.to_numpy().tolist())}
    if isinstance(value, pd.Series):
        return {"index": plain(list(value.index)), "data": plain(value.to_numpy().tolist())}
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [plain(item) for item in items]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def _activations(md: Any, store: Any, model: str) -> Any:
    record = store.model_record(model)
    stimuli = md.paper_stimuli()
    layers = [md.layer_vectors(store, layer, model, "paper") for layer in range(record.n_layers)]
    return md.Activations(np.stack(layers, axis=2), magnitudes=list(stimuli.magnitudes),
                          carriers=list(stimuli.carriers), name=model, n_blocks=record.n_blocks)


def _runs(md: Any, store: Any) -> Iterator[tuple[str, Callable[[], Any]]]:
    analysis = md.AnalysisParams(n_boot=N_BOOT)
    for model in MODELS:
        arrays = _activations(md, store, model)
        for where, data, name, cache in (("store", store, model, {"use_cache": False}), ("arrays", arrays, None, {})):
            yield f"analyze/{model}/{where}", lambda d=data, n=name, c=cache: md.analyze(d, n, n_boot=N_BOOT, **c)
            yield f"depth/{model}/{where}", lambda d=data, n=name, c=cache: md.depth(d, n, n_boot=N_BOOT, **c)
            yield f"probe/{model}/{where}", lambda d=data, n=name, c=cache: md.probe(d, n, n_boot=N_BOOT, **c)
            yield (f"e5/{model}/{where}",
                   lambda d=data, n=name, c=cache: md.e5(d, n, source="openwebtext-500k", n_boot=N_BOOT, **c))
        control = _activations(md, store, f"{model}@random")
        yield f"robustness/{model}/store", lambda m=model: md.robustness(store, m, analysis=analysis, use_cache=False)
        yield f"robustness/{model}/arrays", lambda a=arrays, r=control: md.robustness(a, analysis=analysis, random=r)
        yield f"design/{model}/store", lambda m=model: md.design(store, m, use_cache=False)
        yield f"design/{model}/arrays", lambda a=arrays: md.design(a)
        yield (f"compare/{model}-random/store",
               lambda m=model: md.compare(store, m, f"{m}@random", n_boot=N_BOOT, use_cache=False))
        yield f"compare/{model}-random/arrays", lambda a=arrays, r=control: md.compare(a, r, n_boot=N_BOOT)


def snapshot(store_path: Path) -> dict[str, Any]:
    """Every analysis's result, recomputed on a copy of the store at ``store_path``."""
    import magdash as md

    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "store.duckdb"
        shutil.copy(store_path, copy)
        shutil.copytree(f"{store_path}.shards", f"{copy}.shards")
        store = md.Store(copy)
        results: dict[str, Any] = {}
        for key, run in _runs(md, store):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    results[key] = plain(run())
                except Exception as error:  # a snapshot records what each analysis gives, refusals included
                    results[key] = {"error": f"{type(error).__name__}: {error}"}
            print(key, file=sys.stderr)
        return results


def differences(before: Any, after: Any, rtol: float, atol: float, where: str = "") -> Iterator[str]:
    """Each place where ``after`` differs from ``before`` beyond the tolerances."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            if key not in after:
                yield f"{where}/{key}: only before"
            elif key not in before:
                yield f"{where}/{key}: only after"
            else:
                yield from differences(before[key], after[key], rtol, atol, f"{where}/{key}")
    elif isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            yield f"{where}: {len(before)} items before, {len(after)} after"
        else:
            for index, (first, second) in enumerate(zip(before, after, strict=True)):
                yield from differences(first, second, rtol, atol, f"{where}[{index}]")
    elif isinstance(before, (int, float)) and isinstance(after, (int, float)) and not isinstance(before, bool):
        if not math.isclose(before, after, rel_tol=rtol, abs_tol=atol):
            yield f"{where}: {before!r} -> {after!r}"
    elif before != after:
        yield f"{where}: {before!r} -> {after!r}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, help="the store holding minilm, smollm2 and their @random controls")
    parser.add_argument("--out", type=Path, help="where to write the snapshot's JSON")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--rtol", type=float, default=1e-9)
    parser.add_argument("--atol", type=float, default=1e-12)
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(path.read_text()) for path in args.compare)
        found = list(differences(before, after, args.rtol, args.atol))
        print("\n".join(found[:200]) if found else f"identical within rtol {args.rtol}: {len(before)} results")
        return 1 if found else 0
    if args.store is None or args.out is None:
        parser.error("give --store and --out, or --compare BEFORE AFTER")
    args.out.write_text(json.dumps(snapshot(args.store), indent=None, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
