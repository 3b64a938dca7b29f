"""Build ``store_v2.duckdb.gz``: a store written by magdash's schema 2, for the migration tests.

It was made with the code of commit a7b5e7f (the last release writing schema 2), unpacked
beside this script::

    mkdir /tmp/v2 && git archive a7b5e7f | tar -x -C /tmp/v2
    cp tests/data/make_store_v2.py /tmp/v2/tests/data/
    python /tmp/v2/tests/data/make_store_v2.py tests/data

and holds what schema 2 allowed and schema 3 merges: two models imported without carriers on
the same magnitudes (schema 2 made a stimulus set for each, ``first-stimuli`` and
``second-stimuli``, with the same sentences, so each model listed both and an analysis
without ``--stimuli`` failed), a model imported with the paper's sentences under the name
``mine``, and an analysis cached for ``first``. ``store_v2_expected.npz`` has the vectors the
store must still hold after a migration, exported by that same code.
"""

from __future__ import annotations

import gzip
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(1, str(HERE.parent.parent))

from magdash.analysis import analyze  # noqa: E402
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES  # noqa: E402
from magdash.store import SCHEMA_VERSION, Store  # noqa: E402

MAGNITUDES = (1, 2, 5, 10, 50, 100)


def main(out: Path) -> None:
    assert SCHEMA_VERSION == 2, "run this against the schema-2 code (commit a7b5e7f)"
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        store = Store(work / "store.duckdb")
        rng = np.random.default_rng(2)
        arrays = {
            "first": rng.normal(size=(len(MAGNITUDES), 3, 4, 8)).astype(np.float32),
            "second": rng.normal(size=(len(MAGNITUDES), 3, 4, 8)).astype(np.float32),
            "third": rng.normal(size=(len(PAPER_MAGNITUDES), 5, 3, 8)).astype(np.float32),
        }
        store.import_arrays("first", arrays["first"], MAGNITUDES)
        store.import_arrays("second", arrays["second"], MAGNITUDES)
        store.import_arrays("third", arrays["third"], PAPER_MAGNITUDES, carriers=list(PAPER_CARRIERS), stimuli="mine")
        assert store.stimulus_sets_for("first") == ["first-stimuli", "second-stimuli"]
        analyze(store, "first", "first-stimuli")
        np.savez(out / "store_v2_expected.npz", **arrays)
        with open(work / "store.duckdb", "rb") as source, gzip.open(out / "store_v2.duckdb.gz", "wb", 9) as target:
            shutil.copyfileobj(source, target)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
