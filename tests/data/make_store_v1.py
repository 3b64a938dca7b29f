"""Build ``store_v1.duckdb.gz``: a store written by magdash's schema 1, for the migration tests.

It was made with the code of commit 0068e33 (the last release writing schema 1)::

    git worktree add /tmp/v1 0068e33
    PYTHONPATH=/tmp/v1 python tests/data/make_store_v1.py tests/data

and holds: a tiny Llama extracted on 6 magnitudes x the paper's 5 carriers, an imported model
whose layer 2 has NaN and Inf vectors (schema 1 stored them without a flag), a cached analysis
and a frequency source. ``store_v1_expected.npz`` has what the store must still hold after a
migration, exported by that same code.
"""

from __future__ import annotations

import gzip
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(1, str(HERE.parent.parent))

from magdash.analysis import analyze  # noqa: E402
from magdash.extract import extract  # noqa: E402
from magdash.stimuli import PAPER_CARRIERS, StimulusSet  # noqa: E402
from magdash.store import SCHEMA_VERSION, Store  # noqa: E402
from tests.conftest import build_tiny_model  # noqa: E402

MAGNITUDES = (1, 2, 5, 10, 50, 100)


def main(out: Path) -> None:
    assert SCHEMA_VERSION == 1, "run this against the schema-1 code (commit 0068e33)"
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        model = build_tiny_model(work / "tiny-llama", "llama")
        store = Store(work / "store.duckdb")
        stimuli = StimulusSet("six", PAPER_CARRIERS, MAGNITUDES)
        extract(str(model), stimuli, store, name="tiny", batch_size=8)
        rng = np.random.default_rng(1)
        imported = rng.normal(size=(len(MAGNITUDES), 5, 4, 16)).astype(np.float32)
        imported[1, 2, 2, 3] = np.nan
        imported[4, 0, 2, 0] = np.inf
        store.import_arrays("with-nan", imported, MAGNITUDES, carriers=list(PAPER_CARRIERS), stimuli="six")
        analyze(store, "tiny", "six")
        store.put_frequency_source("toy", pd.DataFrame({"number": MAGNITUDES, "count": [60, 50, 40, 30, 20, 10]}),
                                   {"origin": "make_store_v1.py"})
        np.savez(
            out / "store_v1_expected.npz",
            tiny=store.export_arrays("tiny", "six")["per_carrier"],
            with_nan=store.export_arrays("with-nan", "six")["per_carrier"],
        )
        with open(work / "store.duckdb", "rb") as source, gzip.open(out / "store_v1.duckdb.gz", "wb", 9) as target:
            shutil.copyfileobj(source, target)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
