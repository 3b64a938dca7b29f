"""What an attack run on shared stores found (issue 45): a store reached through a symbolic link,
stored frequency sources replaced without a word, totals beyond 64 bits, edited cached results, a
new store that a full disk kept from being created."""

from __future__ import annotations

import errno
import logging
import os
import zlib

import duckdb
import numpy as np
import pandas as pd
import pytest

from magdash.cli import main
from magdash.errors import StoreError
from magdash.frequency.sources import FrequencySource, read_counts_csv
from magdash.jsonio import pack, unpack
from magdash.runs.analysis_runs import analyze
from magdash.runs.frequency_runs import list_sources, load_source, save_source
from magdash.store import SCHEMA_VERSION, Store, connection
from magdash.store.schema import result_checksum
from magdash.store.shards import shard_folder
from magdash.variability.analysis_params import AnalysisParams
from tests.store.test_connection import FailingEngine
from tests.support import file_state

CARRIERS = ("a {n}", "b {n}")


def _vectors(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(4, 2, 3, 5)).astype(np.float32)


# -- a store through a symbolic link ------------------------------------------------------------


def test_a_store_through_a_link_keeps_its_vectors_in_the_targets_shard_folder(tmp_path):
    real, elsewhere = tmp_path / "real", tmp_path / "elsewhere"
    real.mkdir()
    elsewhere.mkdir()
    target = real / "store.duckdb"
    Store(target).import_arrays("first", _vectors(1), (1, 2, 3, 4), carriers=CARRIERS, stimuli="s")
    link = elsewhere / "link.duckdb"
    link.symlink_to(target)

    through_link = Store(link)
    assert through_link.shards == shard_folder(target)
    # The vectors stored before are read through the link ...
    np.testing.assert_allclose(through_link.read_layer("first", "s", 1).vectors, _vectors(1)[:, :, 1, :], rtol=1e-6)
    # ... and those written through it land beside the target, where the target finds them.
    through_link.import_arrays("second", _vectors(2), (1, 2, 3, 4), carriers=CARRIERS, stimuli="s")
    assert os.listdir(elsewhere) == ["link.duckdb"], "nothing may be written beside the link"
    direct = Store(target)
    assert sorted(direct.model_names()) == ["first", "second"]
    np.testing.assert_allclose(direct.read_layer("second", "s", 2).vectors, _vectors(2)[:, :, 2, :], rtol=1e-6)


# -- frequency sources --------------------------------------------------------------------------


def _source(name: str, counts: list[int]) -> FrequencySource:
    return FrequencySource(name, pd.DataFrame({"number": np.arange(1, len(counts) + 1), "count": counts}), {"kind": "csv"})


def test_a_stored_frequency_source_is_replaced_only_when_asked(tmp_path):
    path = tmp_path / "store.duckdb"
    store = Store(path)
    save_source(store, _source("mine", [4, 3, 2, 1]))
    before = file_state(path)
    with pytest.raises(StoreError) as refused:
        save_source(store, _source("mine", [9, 9]))
    message = str(refused.value)
    assert "'mine' is already stored (4 numbers, total count 10)" in message and "replace=True" in message
    assert refused.value.parameters == ("replace",)
    assert file_state(path) == before
    assert list(load_source("mine", store).counts["count"]) == [4, 3, 2, 1]
    save_source(store, _source("mine", [9, 9]), replace=True)
    assert list(load_source("mine", store).counts["count"]) == [9, 9]


def test_frequency_totals_beyond_64_bits_are_exact_and_agree(tmp_path):
    rows = "".join(f"{n},{2**53}\n" for n in range(1, 2000))
    source = read_counts_csv(f"number,count\n{rows}".encode(), name="huge")
    assert source.total == 1999 * 2**53  # an int64 sum gave -441,352,763,482,308,608
    store = Store(tmp_path / "store.duckdb")
    save_source(store, source)
    listed = list_sources(store).set_index("name")
    assert listed.loc["huge", "total"] == 1999 * 2**53
    assert load_source("huge", store).total == 1999 * 2**53


def test_counts_whose_64_bit_sum_wraps_to_zero_are_not_every_count_zero():
    rows = "".join(f"{n},{2**53}\n" for n in range(1, 2049))  # 2048 * 2**53 = 2**64
    assert read_counts_csv(f"number,count\n{rows}".encode(), name="wraps").total == 2**64


# -- cached results read as untrusted input -------------------------------------------------------


def _analysed_store(tmp_path):
    path = tmp_path / "store.duckdb"
    store = Store(path)
    store.import_arrays("m", _vectors(3), (1, 2, 3, 4), carriers=CARRIERS, stimuli="s")
    result = analyze(store, "m", "s", AnalysisParams(n_boot=0))
    (key,) = [row[0] for row in _results(path)]
    return path, store, result, key


def _results(path) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as connection:
        return connection.execute("SELECT key, payload, checksum FROM results ORDER BY key").fetchall()


def _set_payload(path, key: str, payload: bytes, *, checksum: str | None = None) -> None:
    """Replace a cached payload as someone editing a shared store would: the checksum kept, or the
    one of the new payload (an editor who knows the format)."""
    with duckdb.connect(str(path)) as connection:
        if checksum is None:
            connection.execute("UPDATE results SET payload = ? WHERE key = ?", [payload, key])
        else:
            connection.execute("UPDATE results SET payload = ?, checksum = ? WHERE key = ?", [payload, checksum, key])


def _cache_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "cached" in r.getMessage()]


def test_an_edited_cached_analysis_is_computed_again_with_one_warning(tmp_path, caplog):
    path, store, first, key = _analysed_store(tmp_path)
    document = unpack(_results(path)[0][1])
    document["fits"]["data"]["alpha"] = [99.0] * len(document["fits"]["data"]["alpha"])
    _set_payload(path, key, pack(document))
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        again = analyze(Store(path), "m", "s", AnalysisParams(n_boot=0))
    assert not again.from_cache
    np.testing.assert_allclose(again.fits["alpha"], first.fits["alpha"], rtol=1e-12)
    assert (again.fits["alpha"] != 99.0).all()
    (warning,) = _cache_warnings(caplog)
    assert "not what magdash wrote" in warning
    # The recomputed result replaced the edited one, and is read from the cache next time.
    (_, payload, checksum), = _results(path)
    assert checksum == result_checksum(key, payload)
    assert analyze(Store(path), "m", "s", AnalysisParams(n_boot=0)).from_cache


def _bomb(size: int) -> bytes:
    compressor = zlib.compressobj(9)
    chunk = b" " * (1 << 20)
    body = b"".join(compressor.compress(chunk) for _ in range(size >> 20))
    return body + compressor.flush()


MALFORMED = {
    "random bytes": lambda good: bytes(np.random.default_rng(5).integers(0, 256, 300, dtype=np.uint8)),
    "empty": lambda good: b"",
    "truncated": lambda good: good[: len(good) // 2],
    "not JSON": lambda good: zlib.compress(b"{'alpha': 99,"),
    "JSON of another shape": lambda good: pack({"model": "m", "values": [1, 2, 3]}),
    "a list": lambda good: pack([1, 2, 3]),
    "bad parameters": lambda good: pack({**unpack(good), "params": {"n_boot": -5}}),
    "nested deeply": lambda good: zlib.compress(b"[" * 100_000 + b"]" * 100_000),
    "300 MB once decompressed": lambda good: _bomb(300 << 20),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_cached_payload_is_a_miss_computed_again(case, tmp_path, caplog):
    path, store, first, key = _analysed_store(tmp_path)
    bad = MALFORMED[case](_results(path)[0][1])
    _set_payload(path, key, bad, checksum=result_checksum(key, bad))  # passes the checksum: decoding must refuse it
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        again = analyze(Store(path), "m", "s", AnalysisParams(n_boot=0))
    assert not again.from_cache
    np.testing.assert_allclose(again.fits["alpha"], first.fits["alpha"], rtol=1e-12)
    (warning,) = _cache_warnings(caplog)
    assert "cannot be read" in warning and "computed again" in warning
    assert analyze(Store(path), "m", "s", AnalysisParams(n_boot=0)).from_cache


def test_the_cli_recomputes_an_edited_result_with_one_warning_and_no_traceback(tmp_path, capsys, caplog):
    path, store, first, key = _analysed_store(tmp_path)
    _set_payload(path, key, b"\x00garbage")
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # the CLI's log goes to stderr; pytest's handler takes it here
        assert main(["analyze", "--model", "m", "--stimuli", "s", "--n-boot", "0", "--store", str(path)]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert len(_cache_warnings(caplog)) == 1


def test_a_schema_9_store_gains_the_checksums_of_its_cached_results(tmp_path):
    path, store, first, key = _analysed_store(tmp_path)
    with duckdb.connect(str(path)) as connection:  # schema 9 is schema 10 without the checksums
        connection.execute("ALTER TABLE results DROP COLUMN checksum")
        connection.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    migrated = Store(path)
    assert migrated.schema_version() == SCHEMA_VERSION == 11
    (_, payload, checksum), = _results(path)
    assert checksum == result_checksum(key, payload)
    kept = analyze(migrated, "m", "s", AnalysisParams(n_boot=0))
    assert kept.from_cache  # a result cached before is trusted as it was when migrated, not computed again
    np.testing.assert_allclose(kept.fits["alpha"], first.fits["alpha"], rtol=1e-12)


# -- a new store under a full disk ----------------------------------------------------------------


@pytest.mark.parametrize("where", ["writing its tables", "linking it into place"])
def test_a_new_store_a_full_disk_kept_from_being_created_says_nothing_was_created(where, tmp_path, monkeypatch):
    if where == "writing its tables":
        failing = FailingEngine(connection._engine(), "ATTACH", duckdb.IOException("IO Error: No space left on device"), 1)
        monkeypatch.setattr(connection, "_engine", lambda: failing)
    else:
        def full(*_args):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(connection.os, "link", full)
    with pytest.raises(StoreError) as refused:
        Store(tmp_path / "new.duckdb")
    message = str(refused.value)
    assert message.startswith("the disk is full: could not write a new store at") and "Nothing was created there" in message
    assert "Everything stored before" not in message and "carry on" not in message
    assert os.listdir(tmp_path) == []
