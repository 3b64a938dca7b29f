"""Build ``store_v3.duckdb.gz``: a store written by magdash's schema 3, for the migration tests.

It was made with the code of commit 9bc820c (the last release writing schema 3), unpacked
beside this script::

    mkdir /tmp/v3 && git archive 9bc820c | tar -x -C /tmp/v3
    cp tests/data/make_store_v3.py /tmp/v3/tests/data/
    python /tmp/v3/tests/data/make_store_v3.py tests/data

and holds the cached results schema 4 turns into tables: an analysis of ``base`` and of
``tuned`` under magdash's conventions, one of ``base`` under the paper's, a comparison of the
two, the controls of ``base`` (whose schema-3 payload does not name its model) and phase
samples. ``store_v3_expected.json`` has the alphas and deltas those results hold, read by
that same code, which the migrated tables must repeat.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(1, str(HERE.parent.parent))

from magdash.controls_statistics.run import ControlsParams, run_controls  # noqa: E402
from magdash.depth_statistics.run import depth_from_store  # noqa: E402
from magdash.store import SCHEMA_VERSION, Store  # noqa: E402
from magdash.store.npz import import_arrays  # noqa: E402
from magdash.variability.analysis import AnalysisParams, analyze, compare  # noqa: E402

MAGNITUDES = (1, 2, 3, 5, 8, 13, 21, 34, 55, 89)
CARRIERS = ("I saw {} birds.", "There were {} chairs.", "She paid {} dollars.")


def main(out: Path) -> None:
    assert SCHEMA_VERSION == 3, "run this against the schema-3 code (commit 9bc820c)"
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        store = Store(work / "store.duckdb")
        rng = np.random.default_rng(3)
        scale = np.asarray(MAGNITUDES, dtype=np.float64)[:, None, None, None] ** 0.2
        for name in ("base", "tuned"):
            noise = rng.normal(size=(len(MAGNITUDES), len(CARRIERS), 5, 8)) * scale
            import_arrays(store, name, noise.astype(np.float32), MAGNITUDES, carriers=list(CARRIERS), stimuli="tiny")
        fast = AnalysisParams(n_boot=200)
        paper = AnalysisParams(n_boot=200, conventions="paper")
        expected = {
            "base": analyze(store, "base", "tiny", fast).fits[["measure", "layer", "alpha"]].to_dict("list"),
            "tuned": analyze(store, "tuned", "tiny", fast).fits[["measure", "layer", "alpha"]].to_dict("list"),
            "base_paper": analyze(store, "base", "tiny", paper).fits[["measure", "layer", "alpha"]].to_dict("list"),
        }
        comparison = compare(store, "base", "tuned", "tiny", fast)
        expected["delta_eucl"] = comparison.measures["eucl"].layers["delta"].tolist()
        controls = run_controls(store, "base", "tiny", ControlsParams(analysis=fast, n_perm=50))
        expected["icc"] = controls.tables.icc["icc"].tolist()
        depth_from_store(store, "base", "tiny")
        (out / "store_v3_expected.json").write_text(json.dumps(expected, indent=1) + "\n")
        with open(work / "store.duckdb", "rb") as source, gzip.open(out / "store_v3.duckdb.gz", "wb", 9) as target:
            shutil.copyfileobj(source, target)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
