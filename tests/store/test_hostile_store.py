"""What an attack run on shared stores found (issue 45): a store reached through a symbolic link,
stored frequency sources replaced without a word, totals beyond 64 bits, edited cached results, a
new store that a full disk kept from being created."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from magdash.errors import StoreError
from magdash.frequency.sources import FrequencySource, read_counts_csv
from magdash.runs.frequency_runs import list_sources, load_source, save_source
from magdash.store import Store
from magdash.store.shards import shard_folder
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
