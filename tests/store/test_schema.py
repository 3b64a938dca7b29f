"""Schema versioning: stores written by the releases that wrote schemas 1, 2 and 4 (see
``tests/data/make_store_v*.py``) migrate forward with every vector intact; a failed migration
leaves the store as it was; newer, unversioned and foreign DuckDB files are refused untouched."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import numpy as np
import pytest

from magdash.cli import main
from magdash.errors import AnalysisError, StoreError
from magdash.probes.probe_params import ProbeParams
from magdash.runs.analysis_runs import analyze
from magdash.runs.probe_runs import probe
from magdash.store import SCHEMA_VERSION, Store, metrics, schema, shards
from magdash.variability.analysis_params import AnalysisParams
from tests.support import DATA, unpack_store


@pytest.fixture
def v1_store(tmp_path) -> Path:
    return unpack_store(1, tmp_path)


@pytest.fixture
def v4_store(tmp_path) -> Path:
    return unpack_store(4, tmp_path)


@pytest.fixture
def v2_store(tmp_path) -> Path:
    return unpack_store(2, tmp_path)


def stored_sets(path: Path) -> dict[str, str]:
    with duckdb.connect(str(path), read_only=True) as connection:
        return dict(connection.execute("SELECT name, content_hash FROM stimulus_sets").fetchall())


def stored_version(path: Path) -> str:
    with duckdb.connect(str(path), read_only=True) as connection:
        return connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]


def test_the_fixture_is_a_schema_1_store(v1_store):
    assert stored_version(v1_store) == "1"
    with duckdb.connect(str(v1_store), read_only=True) as connection:
        tables = {row[0] for row in connection.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert "nonfinite" not in tables and {"models", "done", "results"} <= tables


def test_a_schema_1_store_migrates_with_every_vector_intact(v1_store):
    store = Store(v1_store)
    assert store.schema_version() == SCHEMA_VERSION == 11
    expected = np.load(DATA / "store_v1_expected.npz")
    np.testing.assert_array_equal(store.export_arrays("tiny", "six")["per_carrier"], expected["tiny"])
    np.testing.assert_array_equal(store.export_arrays("with-nan", "six")["per_carrier"], expected["with_nan"])
    assert store.model_names() == ["tiny", "with-nan"]
    assert store.stimulus_sets_for("tiny") == ["six"]
    assert list(store.list_frequency_sources()["name"]) == ["toy"]
    # The migration found the NaN and Inf vectors schema 1 stored without a flag.
    assert store.nonfinite_counts("with-nan", "six") == {2: 2}
    assert store.nonfinite_counts("tiny", "six") == {}
    assert [layer.n_nonfinite for layer in store.read_layers("with-nan", "six")] == [0, 0, 2, 0]


def test_a_migrated_store_analyses_and_flags(v1_store, capsys):
    store = Store(v1_store)
    result = analyze(store, "with-nan", "six", AnalysisParams(n_boot=0))
    assert result.nonfinite_layers == {2: 2}
    assert np.isnan(result.alphas("eucl")[2]) and np.isfinite(result.alphas("eucl")[[0, 1, 3]]).all()
    assert main(["analyze", "--model", "with-nan", "--store", str(v1_store), "--n-boot", "0"]) == 0
    assert "layer 2 holds Inf/NaN" in capsys.readouterr().err


def test_a_failed_migration_leaves_the_store_as_it_was(v1_store, monkeypatch):
    with duckdb.connect(str(v1_store), read_only=True) as connection:
        done_before = connection.execute("SELECT count(*) FROM done").fetchone()[0]

    def migrate_then_fail(connection, _shard_folder):
        connection.execute("CREATE TABLE nonfinite (model_id VARCHAR, layer INTEGER, item_key VARCHAR)")
        connection.execute("DELETE FROM done")
        raise OSError("simulated crash half-way through the migration")

    monkeypatch.setitem(schema.MIGRATIONS, 1, migrate_then_fail)
    with pytest.raises(OSError, match="simulated"):
        Store(v1_store)
    assert stored_version(v1_store) == "1"
    with duckdb.connect(str(v1_store), read_only=True) as connection:
        assert connection.execute("SELECT count(*) FROM done").fetchone()[0] == done_before
        tables = {row[0] for row in connection.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert "nonfinite" not in tables
    monkeypatch.undo()
    assert Store(v1_store).nonfinite_counts("with-nan", "six") == {2: 2}


@pytest.mark.parametrize(
    ("version", "message"),
    [(str(SCHEMA_VERSION + 1), "newer magdash"), ("99", "newer magdash"), ("two", "no valid schema version"), ("0", "no valid schema")],
)
def test_unreadable_versions_are_refused_untouched(tmp_path, version, message, capsys):
    path = tmp_path / "store.duckdb"
    Store(path)
    with duckdb.connect(str(path)) as connection:
        connection.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [version])
    before = path.read_bytes()
    with pytest.raises(StoreError, match=message):
        Store(path)
    assert main(["list", "--store", str(path)]) == 2
    assert message in capsys.readouterr().err
    assert path.read_bytes() == before


def test_a_store_without_a_version_is_refused(tmp_path):
    path = tmp_path / "store.duckdb"
    Store(path)
    with duckdb.connect(str(path)) as connection:
        connection.execute("DELETE FROM meta")
    with pytest.raises(StoreError, match="no valid schema version"):
        Store(path)


def test_a_foreign_duckdb_file_is_refused_untouched(tmp_path, capsys):
    path = tmp_path / "other.duckdb"
    with duckdb.connect(str(path)) as connection:
        connection.execute("CREATE TABLE experiments (id INTEGER, note VARCHAR)")
        connection.execute("INSERT INTO experiments VALUES (1, 'keep me')")
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a magdash store .*experiments"):
        Store(path)
    assert main(["analyze", "--model", "m", "--store", str(path)]) == 2
    assert "not a magdash store" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_opening_a_current_store_writes_nothing(tmp_path):
    path = tmp_path / "store.duckdb"
    Store(path).put_result("k", "test", b"payload")
    before = path.read_bytes()
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION and store.get_result("k") == b"payload"
    assert path.read_bytes() == before


def test_the_v2_fixture_holds_one_content_under_two_names(v2_store):
    assert stored_version(v2_store) == "2"
    sets = stored_sets(v2_store)
    assert set(sets) == {"first-stimuli", "second-stimuli", "mine"}
    assert sets["first-stimuli"] == sets["second-stimuli"]


def test_a_schema_2_store_keeps_one_set_per_content_with_every_vector_intact(v2_store, capsys):
    with duckdb.connect(str(v2_store), read_only=True) as connection:
        done_before = connection.execute("SELECT count(*) FROM done").fetchone()[0]
    store = Store(v2_store)
    assert store.schema_version() == SCHEMA_VERSION == 11
    assert store.stimulus_set_names() == ["first-stimuli", "paper"]
    assert store.stimulus_sets_for("first") == store.stimulus_sets_for("second") == ["first-stimuli"]
    assert store.stimulus_sets_for("third") == ["paper"]  # the paper's sentences go by their name
    expected = np.load(DATA / "store_v2_expected.npz")
    for name, stimuli in (("first", "first-stimuli"), ("second", "first-stimuli"), ("third", "paper")):
        np.testing.assert_array_equal(store.export_arrays(name, stimuli)["per_carrier"], expected[name])
    with duckdb.connect(str(v2_store), read_only=True) as connection:
        assert connection.execute("SELECT count(*) FROM done").fetchone()[0] == done_before
        items = connection.execute("SELECT set_name, count(*) FROM stimulus_items GROUP BY set_name ORDER BY 1").fetchall()
    assert items == [("first-stimuli", 18), ("paper", 130)]
    # the model imported alone no longer has "several stimulus sets"
    assert main(["analyze", "--model", "second", "--store", str(v2_store), "--n-boot", "0", "--json"]) == 0
    assert '"stimuli": "first-stimuli"' in capsys.readouterr().out
    # and the same sentences under a new name are refused, leaving the store as it is
    with pytest.raises(StoreError, match="'first-stimuli' holds these same sentences"):
        store.import_arrays("fourth", expected["first"], (1, 2, 5, 10, 50, 100), stimuli="again")
    assert store.stimulus_set_names() == ["first-stimuli", "paper"] and "fourth" not in store.model_names()


def test_a_failed_merge_leaves_the_store_as_it_was(v2_store, monkeypatch):
    before = stored_sets(v2_store)

    def merge_then_fail(connection, _shard_folder):
        connection.execute("DELETE FROM stimulus_items WHERE set_name = 'second-stimuli'")
        connection.execute("DELETE FROM stimulus_sets WHERE name = 'second-stimuli'")
        raise OSError("simulated crash half-way through the migration")

    monkeypatch.setitem(schema.MIGRATIONS, 2, merge_then_fail)
    with pytest.raises(OSError, match="simulated"):
        Store(v2_store)
    assert stored_version(v2_store) == "2" and stored_sets(v2_store) == before
    monkeypatch.undo()
    assert Store(v2_store).stimulus_sets_for("second") == ["first-stimuli"]


# -- schema 4 -> 5: vectors into shards ------------------------------------------------------


def vector_tables(path: Path) -> set[str]:
    with duckdb.connect(str(path), read_only=True) as connection:
        return {row[0] for row in connection.execute(
            "SELECT table_name FROM duckdb_tables() WHERE starts_with(table_name, 'vec_')").fetchall()}


def test_the_v4_fixture_keeps_its_vectors_in_tables(v4_store):
    assert stored_version(v4_store) == "4"
    assert len(vector_tables(v4_store)) == 3 * 5
    assert not shards.shard_folder(v4_store).exists()


def test_a_schema_4_store_moves_its_vectors_into_shards_bit_for_bit(v4_store):
    expected = np.load(DATA / "store_v4_expected.npz")
    size_before = v4_store.stat().st_size
    store = Store(v4_store)
    # the file is rewritten without the space of the dropped vector tables
    assert v4_store.stat().st_size < size_before and not list(v4_store.parent.glob(".*.creating-*"))
    assert store.schema_version() == SCHEMA_VERSION
    for name in ("base", "flagged"):
        got = store.export_arrays(name, "tiny")["per_carrier"]
        assert np.array_equal(got.view(np.uint32), expected[name].view(np.uint32)), name
    assert store.nonfinite_counts("flagged", "tiny") == {3: 2}
    assert store.nonfinite_counts("base", "tiny") == {}
    progress = store.extraction_progress().set_index("name")
    assert (progress.loc["partial", "done"], progress.loc["partial", "total"]) == (15, 30)
    with pytest.raises(StoreError, match="15 of 30 vectors"):
        store.read_layer("partial", "tiny", 0)
    # the schema-4 release's cached analysis is kept; the analysis version has moved on since, so
    # asking again computes it anew, and its alphas are the old ones
    with duckdb.connect(str(v4_store), read_only=True) as connection:
        kept = connection.execute("SELECT count(*) FROM results").fetchone()[0]
    assert kept >= 1
    assert np.allclose(analyze(store, "base", "tiny", AnalysisParams(n_boot=100)).fits["alpha"].to_numpy(),
                       expected["base_alphas"], rtol=1e-9, atol=1e-12, equal_nan=True)
    assert vector_tables(v4_store) == set()
    with duckdb.connect(str(v4_store), read_only=True) as connection:
        registered = {row[0] for row in connection.execute("SELECT shard FROM shards").fetchall()}
        located = connection.execute("SELECT count(*) FROM done WHERE shard IN (SELECT shard FROM shards)").fetchone()[0]
    assert located == 30 + 30 + 15
    assert set(shards.shard_files(shards.shard_folder(v4_store))) == registered
    assert not list(shards.shard_folder(v4_store).glob("*.scratch"))


def test_a_shard_migration_failing_half_way_leaves_the_schema_4_store_readable(v4_store, monkeypatch):
    written = []
    original = shards.write_shard

    def write_then_fail(*args, **kwargs):
        if len(written) == 2:  # the third shard of the first model
            raise OSError(28, "No space left on device")
        written.append(original(*args, **kwargs))
        return written[-1]

    monkeypatch.setattr(shards, "WRITE_BATCH_BYTES", 10 * 5 * 8 * 4)  # ten items a shard: three a model
    monkeypatch.setattr(shards, "write_shard", write_then_fail)
    with pytest.raises(OSError, match="No space left"):
        Store(v4_store)
    assert stored_version(v4_store) == "4" and len(vector_tables(v4_store)) == 15
    assert written and shards.shard_files(shards.shard_folder(v4_store)) == []
    assert not list(shards.shard_folder(v4_store).glob("*.scratch"))
    monkeypatch.undo()
    expected = np.load(DATA / "store_v4_expected.npz")
    assert np.array_equal(Store(v4_store).export_arrays("base", "tiny")["per_carrier"], expected["base"])


def test_a_schema_5_store_gains_the_design_tables_and_keeps_everything(tmp_path):
    path = tmp_path / "v5.duckdb"
    store = Store(path)
    store.put_result("k", "analysis", b"payload")
    design_tables = [table.name for table in metrics.tables_of("design")]
    with duckdb.connect(str(path)) as connection:  # schema 5 is schema 6 without them
        for name in design_tables:
            connection.execute(f"DROP TABLE {name}")
        connection.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION == 11
    assert all(store.metric_table(name).empty for name in design_tables)
    assert store.get_result("k") == b"payload"


def test_a_schema_6_store_gains_the_sequence_start_and_its_models_read_as_not_recorded(tmp_path, rng):
    path = tmp_path / "v6.duckdb"
    Store(path).import_arrays("old", rng.normal(size=(3, 2, 2, 4)), (1, 2, 3), carriers=("a {n}", "b {n}"),
                              stimuli="s")
    with duckdb.connect(str(path)) as connection:  # schema 6 is schema 7 without these
        expected = connection.execute("SELECT * FROM vector_norms ORDER BY ALL").fetchall()
        connection.execute("ALTER TABLE models DROP COLUMN sequence_start")
        connection.execute("DROP TABLE vector_norms")
        connection.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION == 11
    record = store.model_record("old")
    assert record.sequence_start == "" and record.n_blocks == 1
    assert store.list_models()["sequence_start"].tolist() == [""]
    # the norms are recorded from the shards, as the write would have
    with duckdb.connect(str(path), read_only=True) as connection:
        assert connection.execute("SELECT * FROM vector_norms ORDER BY ALL").fetchall() == expected
    assert len(expected) == 3 * 2 * 2


def test_a_schema_7_store_gains_number_formats_token_facts_and_every_missing_metric_table(tmp_path, rng):
    path = tmp_path / "v7.duckdb"
    store = Store(path)
    store.import_arrays("old", rng.normal(size=(6, 2, 3, 4)), (1, 2, 20, 30, 300, 400), carriers=("a {n}", "b {n}"),
                        stimuli="s")
    store.put_result("k", "compare", b"payload")
    added = ["tokenization_fits", "token_strata", "e4"]  # e4: a metric table an older store could lack
    with duckdb.connect(str(path)) as connection:  # schema 7 is schema 8 without these
        connection.execute("INSERT INTO comparison_tests (result_key, model_a, model_b, stimuli, conventions, measure)"
                           " VALUES ('k', 'old', 'other', 's', 'magdash', 'eucl')")
        connection.execute("ALTER TABLE stimulus_sets DROP COLUMN number_format")
        connection.execute("ALTER TABLE comparison_tests DROP COLUMN stimuli_b")
        connection.execute("ALTER TABLE comparisons DROP COLUMN stimuli_b")
        for table in ("number_tokens", "digit_splitting", *added):
            connection.execute(f"DROP TABLE {table}")
        connection.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION == 11
    assert store.number_formats() == {"s": "digits"} and store.stimulus_set("s").number_format == "digits"
    assert all(store.metric_table(name).empty for name in added)
    tests = store.metric_table("comparison_tests")
    assert tests[["model_a", "stimuli", "stimuli_b"]].values.tolist() == [["old", "s", "s"]]
    # no token facts were recorded before: the model reads as "not recorded", and its analysis says so
    assert store.number_tokens("old", "s") is None and store.digit_splitting("old") is None
    assert store.list_models()["splits_digits"].tolist() == [""]
    result = analyze(store, "old", "s", AnalysisParams(n_boot=0))
    assert not result.has_tokenization and result.tokenization.empty and "not recorded" in result.tokenization_note
    with duckdb.connect(str(path), read_only=True) as connection:
        columns = [row[0] for row in connection.execute("DESCRIBE comparisons").fetchall()]
    assert columns[-1] == "stimuli_b"  # added at the end by the migration; rows are written by column name


def test_a_schema_8_store_gains_the_stimulus_bootstrap_columns_and_keeps_its_rows(tmp_path, rng):
    path = tmp_path / "v8.duckdb"
    store = Store(path)
    store.import_arrays("old", rng.normal(size=(6, 2, 3, 4)), (1, 2, 20, 30, 300, 400), carriers=("a {n}", "b {n}"),
                        stimuli="s")
    added = {"hypotheses": ["mean_alpha_ci_low", "mean_alpha_ci_high", "mean_alpha_p", "n_resamples", "h4_reachable"],
             "e4": ["ratio_ci_low", "difference_p", "wilcoxon_reachable"],
             "comparison_tests": ["mean_delta_ci_low", "mean_delta_ci_high", "mean_delta_p", "wilcoxon_reachable"]}
    with duckdb.connect(str(path)) as connection:  # schema 8 is schema 9 without these columns
        for table, columns in added.items():
            for column in columns:
                connection.execute(f'ALTER TABLE {table} DROP COLUMN "{column}"')
        connection.execute("INSERT INTO comparison_tests (result_key, model_a, model_b, stimuli, stimuli_b, conventions,"
                           " measure, wilcoxon_p) VALUES ('k', 'old', 'other', 's', 's', 'magdash', 'eucl', 0.25)")
        connection.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION == 11
    for table, columns in added.items():
        assert set(columns) <= set(store.metric_table(table).columns), table
    (row,) = store.metric_table("comparison_tests").to_dict(orient="records")
    assert row["wilcoxon_p"] == 0.25 and math.isnan(row["mean_delta_p"])
    analyze(store, "old", "s", AnalysisParams(n_boot=20))  # its rows have every column now
    assert store.metric_table("hypotheses")["n_resamples"].notna().all()


def test_a_schema_8_store_names_e5s_raw_correlation_and_forgets_the_numbers_of_unfitted_spectra(tmp_path):
    path = tmp_path / "v8.duckdb"
    Store(path)
    renamed = {"raw_rho": "rho", "raw_p": "p", "raw_ci_low": "ci_low", "raw_ci_high": "ci_high"}
    with duckdb.connect(str(path)) as connection:  # schema 8 is schema 9 with these names and without these columns
        for new, old in renamed.items():
            connection.execute(f'ALTER TABLE e5 RENAME COLUMN "{new}" TO "{old}"')
        for table, column in (("e5", "partial_ci_low"), ("e5", "partial_ci_high"), ("phase_layers", "omega_mean_low"),
                              ("phase_layers", "omega_mean_high"), ("phase_transitions", "units"),
                              ("phase_transitions", "unit_counts")):
            connection.execute(f'ALTER TABLE {table} DROP COLUMN "{column}"')
        connection.execute("INSERT INTO e5 (result_key, model, layer, rho, p, partial_rho) VALUES ('k', 'm', 3, 0.9, 1e-9, 0.2)")
        connection.execute("INSERT INTO phase_layers (result_key, model, layer, sigma2, mp_edge, tw_margin, largest_gap, "
                           "mp_converged) VALUES ('capped', 'm', 1, 2.0, 3.0, 0.5, 7.0, false), "
                           "('fitted', 'm', 1, 2.0, 3.0, 0.5, 7.0, true)")
        connection.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION == 11
    e5 = store.metric_table("e5")
    assert set(metrics.TABLES_BY_NAME["e5"].column_names) <= set(e5.columns)
    assert e5[["raw_rho", "raw_p", "partial_rho"]].values.tolist() == [[0.9, 1e-9, 0.2]]
    assert e5[["raw_ci_low", "partial_ci_low"]].isna().all().all()
    spectra = store.metric_table("phase_layers").set_index("result_key")
    unfitted = ["sigma2", "mp_edge", "tw_margin", "largest_gap"]
    assert spectra.loc["capped", unfitted].isna().all() and spectra.loc["fitted", unfitted].tolist() == [2.0, 3.0, 0.5, 7.0]
    assert set(metrics.TABLES_BY_NAME["phase_transitions"].column_names) <= set(store.metric_table("phase_transitions"))


def test_a_schema_8_store_gains_the_probes_new_columns_and_table_and_takes_their_rows(tmp_path, rng):
    path = tmp_path / "v8.duckdb"
    Store(path).import_arrays("old", rng.normal(size=(7, 3, 2, 4)), (1, 2, 3, 20, 30, 300, 400),
                              carriers=("a {n}", "b {n}", "c {n}"), stimuli="s")
    added = {"probe_scores": ["baseline_r2", "r2_within_strata", "n_strata_within"],
             "probe_decoded_scaling": ["beta_null", "beta_null_p", "note"], "probes": ["baseline_strata"]}
    with duckdb.connect(str(path)) as connection:  # schema 8 is schema 9 without these
        for table, columns in added.items():
            for column in columns:
                connection.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        connection.execute("DROP TABLE probe_best_layers")
        connection.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION == 11
    probe(store, "old", "s", ProbeParams(n_boot=10, targets=("log",), magnitude_folds=2))
    scores = store.metric_table("probe_scores")
    assert len(scores) == 2 * 2 * 2 and scores["baseline_r2"].notna().all()
    assert len(store.metric_table("probe_best_layers")) == 2
    assert store.metric_table("probes")["baseline_strata"].tolist() == ["digit count"]


# -- compaction --------------------------------------------------------------------------------------


def every_row(path: Path) -> dict[str, list]:
    """Every table's rows (sorted), every view and constraint: what a compaction must keep."""
    with duckdb.connect(str(path), read_only=True) as connection:
        tables = [row[0] for row in connection.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        content = {
            table: sorted(map(repr, connection.execute(f'SELECT * FROM "{table}"').fetchall())) for table in tables
        }
        content["views"] = connection.execute(
            "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall()
        content["constraints"] = connection.execute(
            "SELECT table_name, constraint_text FROM duckdb_constraints() ORDER BY 1, 2").fetchall()
    return content


def store_with_freed_space(path: Path, rng) -> np.ndarray:
    store = Store(path)
    per_carrier = rng.normal(size=(6, 3, 4, 8)).astype(np.float32)
    store.import_arrays("m", per_carrier, [1, 2, 3, 4, 5, 6], stimuli="six")
    store.put_result("k", "analysis", b"payload")
    with duckdb.connect(str(path)) as connection:
        connection.execute("CREATE TABLE filler AS SELECT range AS i, random() AS r FROM range(2000000)")
        connection.execute("CHECKPOINT")
        # Data written after it: DuckDB truncates free blocks at the end of the file, not between.
        connection.execute("CREATE TABLE later AS SELECT range AS i FROM range(100000)")
        connection.execute("CHECKPOINT")
        connection.execute("DROP TABLE filler")
        connection.execute("CHECKPOINT")
    return per_carrier


def test_compact_gives_back_the_freed_space_and_keeps_every_row(tmp_path, rng, capsys):
    path = tmp_path / "store.duckdb"
    per_carrier = store_with_freed_space(path, rng)
    size, rows = path.stat().st_size, every_row(path)
    before, after = Store(path).compact()
    assert before == size and after == path.stat().st_size and after < size / 3
    assert every_row(path) == rows
    np.testing.assert_array_equal(Store(path).export_arrays("m", "six")["per_carrier"], per_carrier)
    assert main(["compact", "--store", str(path)]) == 0
    assert f"store {path}: " in capsys.readouterr().out
    assert not list(tmp_path.glob(".*.creating-*"))


def test_a_failed_compaction_leaves_the_store_as_it_was(tmp_path, rng, monkeypatch):
    import os

    path = tmp_path / "store.duckdb"
    store_with_freed_space(path, rng)
    rows = every_row(path)

    def refuse(source, target):
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(StoreError, match="could not compact store .* it is as it was"):
        Store(path).compact()
    monkeypatch.undo()
    assert every_row(path) == rows and not list(tmp_path.glob(".*.creating-*"))


@pytest.mark.slow
def test_a_writer_that_opens_the_compacted_file_before_the_old_one_is_closed_keeps_its_write(tmp_path, rng, monkeypatch):
    """Another process waiting for the lock opens the new file as soon as it is renamed, while
    the compacting connection still holds the old one: closing that must not touch the new
    file or the log of the other process's write (which is killed before it checkpoints)."""
    import os
    import subprocess
    import sys

    path = tmp_path / "store.duckdb"
    store_with_freed_space(path, rng)
    writer = (
        "import duckdb, sys, time\n"
        f"connection = duckdb.connect({str(path)!r})\n"
        "connection.execute('CREATE TABLE written_meanwhile AS SELECT 42 AS x')\n"
        "print('written', flush=True)\n"
        "time.sleep(120)\n"
    )
    real_replace, children = os.replace, []

    def replace_then_write(source, target):
        real_replace(source, target)
        child = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, text=True)
        children.append(child)
        assert child.stdout.readline().strip() == "written"

    monkeypatch.setattr(os, "replace", replace_then_write)
    try:
        Store(path).compact()
    finally:
        for child in children:
            child.kill()
            child.wait()
    monkeypatch.undo()
    assert Path(f"{path}.wal").exists()  # the killed writer's log, replayed on the next open
    with duckdb.connect(str(path)) as connection:
        assert connection.execute("SELECT x FROM written_meanwhile").fetchall() == [(42,)]
    assert Store(path).get_result("k") == b"payload"


def test_a_schema_8_store_keeps_seeds_as_bigint_so_a_seed_of_2_to_the_31_is_stored(tmp_path, rng):
    path = tmp_path / "v8.duckdb"
    store = Store(path)
    store.import_arrays("old", rng.normal(size=(6, 2, 3, 4)), (1, 2, 20, 30, 300, 400), carriers=("a {n}", "b {n}"),
                        stimuli="s")
    with duckdb.connect(str(path)) as connection:  # schema 8 kept seeds as INTEGER
        connection.execute('ALTER TABLE analyses ALTER COLUMN "seed" TYPE INTEGER')
        connection.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    store = Store(path)
    analyze(store, "old", "s", AnalysisParams(n_boot=5, seed=2**31))
    assert store.metric_table("analyses")["seed"].tolist() == [2**31]
    with pytest.raises(AnalysisError, match="seed=\\d+ must be a whole number from 0 to 2\\*\\*63 - 1"):
        AnalysisParams(seed=2**63)


def test_a_migration_refused_by_the_data_it_meets_is_a_store_error_and_leaves_the_file_as_it_was(tmp_path, rng):
    path = tmp_path / "v8.duckdb"
    Store(path).import_arrays("old", rng.normal(size=(6, 2, 3, 4)), (1, 2, 20, 30, 300, 400),
                              carriers=("a {n}", "b {n}"), stimuli="s")
    with duckdb.connect(str(path)) as connection:  # a seed column someone edited into text, with a formula cell
        connection.execute('ALTER TABLE analyses ALTER COLUMN "seed" TYPE VARCHAR')
        connection.execute("INSERT INTO analyses (result_key, seed) VALUES ('k', '=cmd|calc!A1')")
        connection.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
        connection.execute("CHECKPOINT")
    before = path.read_bytes()
    with pytest.raises(StoreError, match=r"could not be migrated from schema 8 to 9 \(Conversion Error.*left as it was"):
        Store(path)
    assert path.read_bytes() == before


def test_a_schema_10_store_gains_empty_trial_tables_and_keeps_everything(tmp_path, rng):
    path = tmp_path / "v10.duckdb"
    store = Store(path)
    store.import_arrays("old", rng.normal(size=(3, 2, 2, 4)), (1, 2, 3), carriers=("a {n}", "b {n}"), stimuli="s")
    store.put_result("k", "analysis", b"payload")
    with duckdb.connect(str(path)) as connection:  # schema 10 is schema 11 without the trial tables
        for table in ("trials", "trial_runs", "comparison_sets"):
            connection.execute(f"DROP TABLE {table}")
        connection.execute("UPDATE meta SET value = '10' WHERE key = 'schema_version'")
    migrated = Store(path)
    assert migrated.schema_version() == SCHEMA_VERSION == 11 and stored_version(path) == "11"
    assert migrated.comparison_sets().empty and migrated.trial_models().empty
    assert migrated.get_result("k") == b"payload" and migrated.model_names() == ["old"]
    from magdash.comparison_stimuli import paper_comparisons

    migrated.put_comparison_set(paper_comparisons())
    assert migrated.comparison_sets()["name"].tolist() == ["paper"]
