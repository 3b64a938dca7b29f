"""The metric tables: every computed result also as tidy rows beside its cache entry.

Rows are checked against the result objects they come from, a recomputation replaces them in
the same transaction as the cache entry, a schema-3 store written by the previous release
(``tests/data/make_store_v3.py``) gets them from its cache, and the SQL how-to's queries
(``docs/how-to/sql.md``) run on a read-only connection and give the numbers the analyses give.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from magdash.cli import main
from magdash.controls_statistics.controls_params import ControlsParams
from magdash.errors import StoreError
from magdash.frequency import FrequencySource
from magdash.runs import rows
from magdash.runs.analysis_runs import analyze, compare
from magdash.runs.backfill import backfill_store
from magdash.runs.controls_runs import run_controls
from magdash.runs.depth_runs import depth_from_store
from magdash.runs.frequency_runs import e5_from_store
from magdash.store import SCHEMA_VERSION, Store, metrics, schema
from magdash.store.npz import import_arrays
from magdash.variability.analysis_params import AnalysisParams
from tests.support import DATA, ROOT, unpack_store

MAGNITUDES = np.array([1, 2, 3, 5, 8, 13, 21, 34, 55, 89])
CARRIERS = ["I saw {} birds.", "There were {} chairs.", "She paid {} dollars.", "We ran {} miles."]
FAST = AnalysisParams(n_boot=100)


def planted(rng: np.random.Generator, alpha: float, n_layers: int = 5) -> np.ndarray:
    """Vectors whose spread around each magnitude's centroid grows as n^alpha."""
    scale = MAGNITUDES.astype(np.float64)[:, None, None, None] ** alpha
    return (rng.normal(size=(len(MAGNITUDES), len(CARRIERS), n_layers, 16)) * scale).astype(np.float32)


@pytest.fixture
def two_models(store, rng) -> Store:
    import_arrays(store, "base", planted(rng, 0.5), MAGNITUDES, carriers=CARRIERS, stimuli="planted")
    import_arrays(store, "tuned", planted(rng, -0.3), MAGNITUDES, carriers=CARRIERS, stimuli="planted")
    return store


def rows_of(store: Store, table: str, key: str | None = None) -> pd.DataFrame:
    frame = store.metric_table(table)
    return frame if key is None else frame[frame["result_key"] == key].reset_index(drop=True)


def test_an_analysis_is_written_as_fits_hypotheses_e3_and_e4(two_models):
    result = analyze(two_models, "base", "planted", FAST)
    fits = rows_of(two_models, "fits").sort_values(["measure", "layer"]).reset_index(drop=True)
    expected = result.fits.sort_values(["measure", "layer"]).reset_index(drop=True)
    assert len(fits) == len(expected) == 3 * result.n_layers
    assert set(fits["model"]) == {"base"} and set(fits["stimuli"]) == {"planted"}
    assert set(fits["conventions"]) == {"magdash"}
    for column in ("alpha", "ci_low", "ci_high", "alpha_theil_sen", "intercept", "r2", "p", "se"):
        np.testing.assert_allclose(fits[column], expected[column], rtol=0, atol=0, equal_nan=True)
    assert fits["core"].tolist() == expected["core"].tolist()
    # the planted alpha of 0.5, seen through the store's table
    core_eucl = fits[(fits["measure"] == "eucl") & fits["core"]]
    assert abs(core_eucl["alpha"].mean() - 0.5) < 0.15
    hypotheses = rows_of(two_models, "hypotheses").set_index("measure")
    for measure, item in result.hypotheses.items():
        assert hypotheses.loc[measure, "mean_alpha"] == item.mean_alpha
        assert bool(hypotheses.loc[measure, "h1"]) == item.h1
        assert list(hypotheses.loc[measure, "h4_layers"]) == list(item.h4_layers)
        assert (hypotheses.loc[measure, "window_low"], hypotheses.loc[measure, "window_high"]) == item.window
    e3 = rows_of(two_models, "e3")
    assert sorted(e3["layer"][e3["measure"] == "eucl"]) == sorted(result.e3["eucl"].layers)
    e4 = rows_of(two_models, "e4").iloc[0]
    assert e4["ratio"] == result.e4.ratio and e4["n_pairs"] == result.e4.n_pairs
    np.testing.assert_array_equal(rows_of(two_models, "e4_layers")["alpha_on"], result.e4.alpha_on)
    analyses = rows_of(two_models, "analyses").iloc[0]
    assert list(analyses["core_layers"]) == result.core_layers
    assert json.loads(analyses["params"])["n_boot"] == 100


def test_a_missing_number_is_null_so_sql_aggregates_skip_it(two_models):
    analyze(two_models, "base", "planted", FAST)
    with duckdb.connect(str(two_models.path), read_only=True) as connection:
        with_ci, total, null_ci = connection.execute(
            "SELECT count(ci_low), count(*), count(*) FILTER (WHERE ci_low IS NULL) FROM fits"
        ).fetchone()
    # intervals are bootstrapped over the core band only; other layers have none (NULL, not NaN)
    assert 0 < with_ci < total and null_ci == total - with_ci


@pytest.mark.slow
def test_a_recomputation_replaces_its_rows(two_models):
    analyze(two_models, "base", "planted", FAST)
    analyze(two_models, "base", "planted", FAST, use_cache=False)
    analyze(two_models, "base", "planted", FAST, use_cache=False)
    assert len(rows_of(two_models, "fits")) == 3 * 5
    assert len(rows_of(two_models, "analyses")) == 1
    analyze(two_models, "base", "planted", AnalysisParams(n_boot=100, conventions="paper"))
    analyses = rows_of(two_models, "analyses")
    assert sorted(analyses["conventions"]) == ["magdash", "paper"] and len(rows_of(two_models, "fits")) == 30


def test_rows_and_cache_entry_are_one_transaction(two_models, monkeypatch):
    result = analyze(two_models, "base", "planted", FAST)
    key = rows_of(two_models, "analyses")["result_key"].iloc[0]
    broken = rows.analysis_rows(result)
    broken["fits"] = broken["fits"].drop(columns="alpha")
    with pytest.raises(StoreError, match=r"rows for fits have the wrong columns: missing \['alpha'\]"):
        two_models.put_result(key, "analysis", b"replacement", broken)
    # the failed write changed nothing: the old entry and its rows are intact
    assert two_models.get_result(key) == result.to_payload()
    assert len(rows_of(two_models, "fits", key)) == 15
    with pytest.raises(StoreError, match="has no metric tables"):
        two_models.put_result(key, "analysis", b"x", {"e5": broken["fits"]})


def test_a_comparison_is_written_per_layer_and_per_measure(two_models):
    result = compare(two_models, "base", "tuned", "planted", FAST)
    layers = rows_of(two_models, "comparisons")
    eucl = layers[layers["measure"] == "eucl"].sort_values("layer_a")
    np.testing.assert_array_equal(eucl["delta"], result.measures["eucl"].layers["delta"])
    assert (eucl["delta"] == eucl["alpha_a"] - eucl["alpha_b"]).all()
    tests = rows_of(two_models, "comparison_tests").set_index("measure")
    assert tests.loc["eucl", "mean_delta"] == result.measures["eucl"].mean_delta
    # planted 0.5 against -0.3: model A's alpha is larger
    assert tests.loc["eucl", "mean_delta"] > 0.4


@pytest.mark.slow
def test_controls_e5_and_phase_are_written(two_models):
    controls = run_controls(two_models, "base", "planted", ControlsParams(analysis=FAST, n_perm=50, random_control=False))
    icc = rows_of(two_models, "controls_icc")
    np.testing.assert_array_equal(icc["icc"], controls.tables.icc["icc"])
    loo = rows_of(two_models, "controls_loo")
    assert len(loo) == 3 * 5 * len(CARRIERS) and set(loo["carrier"]) == set(range(len(CARRIERS)))
    assert set(rows_of(two_models, "controls_permutation")["n_perm"]) == {50}

    source = FrequencySource("planted-counts", pd.DataFrame({"number": MAGNITUDES, "count": 1000 // MAGNITUDES}), {})
    table = e5_from_store(two_models, "base", source, stimuli="planted", n_boot=50)
    e5 = rows_of(two_models, "e5")
    for column in ("partial_rho", "partial_ci_low", "raw_rho", "raw_ci_high"):
        np.testing.assert_array_equal(e5[column], table[column])
    assert set(e5["source"]) == {"planted-counts"} and set(e5["n_boot"]) == {50}

    result = depth_from_store(two_models, "base", "planted")
    phase = rows_of(two_models, "phase_layers")
    np.testing.assert_array_equal(phase["omega_mean"], [item.omega.mean for item in result.layers])
    transitions = rows_of(two_models, "phase_transitions").set_index("curve")
    assert transitions.loc["omega", "gamma_c"] == result.order.gamma_c
    depth_from_store(two_models, "base", "planted")  # a second view writes no second copy
    assert len(rows_of(two_models, "phase_layers")) == len(result.layers)


def test_e5_is_cached(two_models, monkeypatch):
    source = FrequencySource("planted-counts", pd.DataFrame({"number": MAGNITUDES, "count": 1000 // MAGNITUDES}), {})
    first = e5_from_store(two_models, "base", source, stimuli="planted", n_boot=50)

    def no_second_computation(*args, **kwargs):
        raise AssertionError("E5 was computed again")

    monkeypatch.setattr("magdash.runs.frequency_runs.e5_correlation", no_second_computation)
    pd.testing.assert_frame_equal(e5_from_store(two_models, "base", source, stimuli="planted", n_boot=50), first)
    other = FrequencySource("planted-counts", pd.DataFrame({"number": MAGNITUDES, "count": MAGNITUDES}), {})
    with pytest.raises(AssertionError, match="computed again"):  # other counts under the same name
        e5_from_store(two_models, "base", other, stimuli="planted", n_boot=50)


def test_an_unknown_table_is_named_with_the_known_ones(store):
    with pytest.raises(StoreError, match="no metric table 'alphas'; the tables are analyses, fits"):
        store.metric_table("alphas")


def test_the_documented_columns_are_the_tables_columns(store):
    with duckdb.connect(str(store.path), read_only=True) as connection:
        for table in metrics.METRIC_TABLES:
            columns = [row[0] for row in connection.execute(f"DESCRIBE {table.name}").fetchall()]
            assert columns == ["result_key", *table.column_names, "computed_at"]
    documented = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    assert metrics.metric_tables_markdown() in documented


# -- the migration from schema 3 -------------------------------------------------------------


@pytest.fixture
def v3_store(tmp_path) -> Path:
    return unpack_store(3, tmp_path)


def stored_version(path: Path) -> str:
    with duckdb.connect(str(path), read_only=True) as connection:
        return connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]


@pytest.mark.slow
def test_a_schema_3_store_gets_its_cached_results_as_tables_by_a_backfill(v3_store, capsys):
    expected = json.loads((DATA / "store_v3_expected.json").read_text())
    assert stored_version(v3_store) == "3"
    store = Store(v3_store)
    assert store.schema_version() == SCHEMA_VERSION
    # The migration only creates the tables: it never decodes a result, whose types live above the store.
    assert store.metric_table("fits").empty and len(store.results_without_rows("analysis")) == 3
    assert main(["backfill", "--store", str(v3_store)]) == 0
    assert "metric rows written for cached results: 3 analysis, 1 compare" in capsys.readouterr().out
    assert not store.results_without_rows("analysis") and not store.results_without_rows("compare")
    fits = store.metric_table("fits")
    for name, model, conventions in (("base", "base", "magdash"), ("tuned", "tuned", "magdash"),
                                     ("base_paper", "base", "paper")):
        rows = fits[(fits["model"] == model) & (fits["conventions"] == conventions)]
        rows = rows.set_index(["measure", "layer"])["alpha"]
        want = pd.Series(expected[name]["alpha"], index=pd.MultiIndex.from_arrays(
            [expected[name]["measure"], expected[name]["layer"]]))
        np.testing.assert_allclose(rows.loc[want.index].to_numpy(), want.to_numpy(), rtol=0, atol=0, equal_nan=True)
    comparisons = store.metric_table("comparisons")
    eucl = comparisons[comparisons["measure"] == "eucl"].sort_values("layer_a")
    np.testing.assert_allclose(eucl["delta"], expected["delta_eucl"], rtol=0, atol=0)
    # schema-3 controls did not name their model: no rows until they are next run, then exact ones
    assert store.metric_table("controls_icc").empty
    run_controls(store, "base", "tiny", ControlsParams(analysis=AnalysisParams(n_boot=200), n_perm=50))
    np.testing.assert_allclose(store.metric_table("controls_icc")["icc"], expected["icc"], rtol=0, atol=0)


@pytest.mark.slow
def test_a_failed_metric_migration_leaves_the_schema_3_store_as_it_was(v3_store, monkeypatch):
    def fill_then_fail(connection, _shard_folder):
        for statement in metrics.schema_statements():
            connection.execute(statement)
        connection.execute("DELETE FROM results")
        raise OSError("simulated crash half-way through the migration")

    monkeypatch.setitem(schema.MIGRATIONS, 3, fill_then_fail)
    with pytest.raises(OSError, match="simulated"):
        Store(v3_store)
    assert stored_version(v3_store) == "3"
    with duckdb.connect(str(v3_store), read_only=True) as connection:
        assert connection.execute("SELECT count(*) FROM results").fetchone()[0] > 0
        tables = {row[0] for row in connection.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert not tables & set(metrics.TABLES_BY_NAME)
    monkeypatch.undo()
    migrated = Store(v3_store)
    assert migrated.metric_table("analyses").empty
    assert backfill_store(migrated) == {"analysis": 3, "compare": 1, "controls": 0, "e5": 0, "probe": 0, "behaviour": 0,
                                        "steer": 0}
    assert len(migrated.metric_table("analyses")) == 3


def test_a_result_cached_before_its_tables_gets_its_rows_when_next_read(two_models):
    result = analyze(two_models, "base", "planted", FAST)
    key = rows_of(two_models, "analyses")["result_key"].iloc[0]
    two_models.put_result(key, "analysis", result.to_payload(), {})  # the payload alone, as a migrated store has it
    assert not two_models.has_metric_rows(key, "analysis") and two_models.results_without_rows("analysis") == [key]
    again = analyze(two_models, "base", "planted", FAST)
    assert again.from_cache and two_models.has_metric_rows(key, "analysis")
    fits = rows_of(two_models, "fits", key).sort_values(["measure", "layer"])
    expected = result.fits.sort_values(["measure", "layer"])
    np.testing.assert_array_equal(fits["alpha"].to_numpy(), expected["alpha"].to_numpy())
    assert backfill_store(two_models) == {"analysis": 0, "compare": 0, "controls": 0, "e5": 0, "probe": 0,
                                         "behaviour": 0, "steer": 0}


# -- the SQL how-to's queries (docs/how-to/sql.md) ---------------------------------------


def documented_queries() -> list[str]:
    text = (ROOT / "docs" / "how-to" / "sql.md").read_text(encoding="utf-8")
    return re.findall(r"```sql\n(.*?)```", text, re.S)


@pytest.mark.slow
def test_the_documented_queries_give_the_analyses_numbers(two_models):
    queries = documented_queries()
    assert len(queries) == 3
    # The how-to names the built-in model and its control; here they are base and tuned.
    queries = [q.replace("'minilm@random'", "'tuned'").replace("'minilm'", "'base'") for q in queries]
    stale = analyze(two_models, "base", "planted", AnalysisParams(n_boot=100, seed=7))  # an older, other analysis
    base = analyze(two_models, "base", "planted", FAST)
    tuned = analyze(two_models, "tuned", "planted", FAST)
    assert stale.fits["alpha"].tolist() == base.fits["alpha"].tolist()  # same alphas, other CIs: counted once
    with duckdb.connect(str(two_models.path), read_only=True) as connection:
        means = connection.execute(queries[0]).df()
        positive = connection.execute(queries[1]).df()
        joined = connection.execute(queries[2]).df()
    for result in (base, tuned):
        for measure, item in result.hypotheses.items():
            row = means[(means["model"] == result.model) & (means["measure"] == measure)]
            assert len(row) == 1
            assert row["mean_core_alpha"].iloc[0] == pytest.approx(item.mean_alpha, abs=1e-12)
            assert row["core_layers"].iloc[0] == item.n_valid  # the older analysis is not counted
    expected_positive = sum(int((r.fits["alpha"] > 0).sum()) for r in (base, tuned))
    assert len(positive) == expected_positive and (positive["alpha"] > 0).all()
    comparison = compare(two_models, "base", "tuned", "planted", FAST).measures
    for measure, item in comparison.items():
        core = item.layers[item.layers["core"]].sort_values("layer_a")
        rows = joined[joined["measure"] == measure].sort_values("layer")
        np.testing.assert_allclose(rows["delta"], core["delta"], rtol=0, atol=1e-15)


def test_a_table_without_a_column_this_magdash_writes_is_named_and_nothing_is_written(two_models, tmp_path):
    """A store made by a development build between two schema versions: its table lacks a column. Another
    store open in the same process has the column (the check reads this store's table, not another's)."""
    complete = Store(tmp_path / "complete.duckdb", create=True)
    assert "alpha_theil_sen" in complete.metric_table("fits").columns
    result = analyze(two_models, "base", "planted", FAST)
    key = rows_of(two_models, "analyses")["result_key"].iloc[0]
    with duckdb.connect(str(two_models.path)) as connection:
        connection.execute("ALTER TABLE fits DROP COLUMN alpha_theil_sen")
    reopened = Store(two_models.path)
    with complete.session(), pytest.raises(  # the complete store stays attached meanwhile
            StoreError, match=r"table fits lacks the column\(s\) \[.alpha_theil_sen.\].*Nothing was written"):
        reopened.put_result(key, "analysis", b"replacement", rows.analysis_rows(result))
    assert reopened.get_result(key) == result.to_payload()
    assert len(rows_of(reopened, "fits", key)) == 15
