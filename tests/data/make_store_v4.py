"""Build ``store_v4.duckdb.gz``: a store written by magdash's schema 4, for the shard migration.

It was made with the code of commit 7b5447e (the last release writing schema 4, whose vectors
are ``vec_*`` tables inside the DuckDB file), unpacked beside this script::

    mkdir /tmp/v4 && git archive 7b5447e | tar -x -C /tmp/v4
    cp tests/data/make_store_v4.py /tmp/v4/tests/data/
    python /tmp/v4/tests/data/make_store_v4.py tests/data

It holds ``base`` (10 magnitudes x 3 carriers x 5 layers x 8), ``flagged`` (the same shape,
with a NaN and an Inf vector at layer 3, so the migration must keep their flags) and
``partial`` (half of its items written), and a cached analysis of ``base``.
``store_v4_expected.npz`` has every complete model's per-carrier array and the analysis's
alphas, read back by that same code, which the migrated store must repeat bit for bit.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

import duckdb
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(1, str(HERE.parent.parent))

from magdash.store import SCHEMA_VERSION, Store  # noqa: E402
from magdash.store.npz import import_arrays  # noqa: E402
from magdash.variability.analysis import AnalysisParams, analyze  # noqa: E402

MAGNITUDES = (1, 2, 3, 5, 8, 13, 21, 34, 55, 89)
CARRIERS = ("I saw {} birds.", "There were {} chairs.", "She paid {} dollars.")


def main(out: Path) -> None:
    assert SCHEMA_VERSION == 4, "run this against the schema-4 code (commit 7b5447e)"
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        store = Store(work / "store.duckdb")
        rng = np.random.default_rng(4)
        shape = (len(MAGNITUDES), len(CARRIERS), 5, 8)
        scale = np.asarray(MAGNITUDES, dtype=np.float64)[:, None, None, None] ** 0.2
        base = (rng.normal(size=shape) * scale).astype(np.float32)
        flagged = rng.normal(size=shape).astype(np.float32)
        flagged[2, 1, 3, 4] = np.nan
        flagged[7, 0, 3, 0] = np.inf
        import_arrays(store, "base", base, MAGNITUDES, carriers=list(CARRIERS), stimuli="tiny")
        import_arrays(store, "flagged", flagged, MAGNITUDES, carriers=list(CARRIERS), stimuli="tiny")
        record, _ = import_arrays(store, "partial", rng.normal(size=shape).astype(np.float32), MAGNITUDES,
                                  carriers=list(CARRIERS), stimuli="tiny")
        # Keep half of partial's items: the other half is what a killed extraction had not written.
        dropped = [item.key for item in store.stimulus_set("tiny").items[1::2]]
        tables = f"vec_{hashlib.sha1(record.model_id.encode()).hexdigest()[:20]}"
        with duckdb.connect(str(work / "store.duckdb")) as connection:
            connection.execute("DELETE FROM done WHERE model_id = ? AND item_key IN (SELECT unnest(?))",
                               [record.model_id, dropped])
            for layer in range(5):
                connection.execute(f"DELETE FROM {tables}_{layer} WHERE item_key IN (SELECT unnest(?))", [dropped])
        alphas = analyze(store, "base", "tiny", AnalysisParams(n_boot=100)).fits["alpha"].to_numpy()
        np.savez(
            out / "store_v4_expected.npz",
            base=store.export_arrays("base", "tiny")["per_carrier"],
            flagged=store.export_arrays("flagged", "tiny")["per_carrier"],
            base_alphas=alphas,
        )
        with open(work / "store.duckdb", "rb") as source, gzip.open(out / "store_v4.duckdb.gz", "wb", 9) as target:
            shutil.copyfileobj(source, target)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
