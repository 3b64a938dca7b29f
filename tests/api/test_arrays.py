"""Arrays in, no store needed: every analysis of :mod:`magdash` on an array gives the numbers the
same analysis gives on the same vectors put into a store (compared exactly: the array path feeds
the statistics the vectors a store would hand them, in the same order)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import magdash as md
from magdash.frequency.sources import FrequencySource

MAGNITUDES = tuple(range(1, 15))
CARRIERS = ("There are {n} apples.", "I counted {n} birds.", "The box holds {n} coins.", "We waited {n} days.")
N_LAYERS, DIM = 6, 24
FAST = md.AnalysisParams(n_boot=100, seed=3)


def planted(seed: int, alpha: float = 0.4) -> np.ndarray:
    """Vectors whose spread over carriers grows as n**alpha, on a centroid moving along log n."""
    rng = np.random.default_rng(seed)
    n = np.asarray(MAGNITUDES, dtype=np.float64)
    direction = rng.normal(size=DIM)
    centroids = np.log(n)[:, None, None] * direction[None, None, :] * np.linspace(0.5, 2, N_LAYERS)[None, :, None]
    noise = rng.normal(size=(len(n), len(CARRIERS), N_LAYERS, DIM)) * (n ** alpha)[:, None, None, None]
    return (centroids[:, None] + noise).astype(np.float32)


@pytest.fixture(scope="module")
def arrays() -> dict[str, md.Activations]:
    return {
        "model": md.Activations(planted(1), MAGNITUDES, carriers=CARRIERS, name="model", source="test:planted"),
        "model@random": md.Activations(planted(2, alpha=0.0), MAGNITUDES, carriers=CARRIERS, name="model@random"),
        "model:other": md.Activations(planted(3, alpha=0.3), MAGNITUDES, carriers=CARRIERS, name="model:other"),
    }


@pytest.fixture(scope="module")
def filled(tmp_path_factory, arrays) -> md.Store:
    store = md.Store(tmp_path_factory.mktemp("arrays") / "store.duckdb")
    for name, activations in arrays.items():
        store.put(name, activations)
    return store


def assert_same_frame(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_exact=True)


def test_an_array_gives_the_fits_of_the_same_array_in_a_store(filled, arrays):
    stored = md.analyze(filled, "model", params=FAST)
    direct = md.analyze(arrays["model"], params=FAST)
    plain = md.analyze(planted(1), magnitudes=MAGNITUDES, carriers=CARRIERS, params=FAST)
    assert len(stored.fits) == N_LAYERS * len(FAST.measures) and stored.fits["alpha"].notna().sum() > 10
    for result in (direct, plain):
        assert_same_frame(result.fits, stored.fits)
        for table in ("noise_models", "geometry", "cv_trend"):
            assert_same_frame(getattr(result, table), getattr(stored, table))
        assert result.hypotheses == stored.hypotheses and result.e3 == stored.e3 and result.e4 == stored.e4
        assert result.core_layers == stored.core_layers and result.carriers == stored.carriers
        for measure, values in stored.values.items():
            np.testing.assert_array_equal(result.values[measure], values)
    # The planted spread: alpha near 0.4 at the core layers.
    assert 0.2 < stored.hypotheses["eucl"].mean_alpha < 0.6


def test_torch_tensors_and_unsorted_rows_give_the_same_numbers(arrays):
    torch = pytest.importorskip("torch")
    reference = md.analyze(arrays["model"], params=FAST)
    order = np.random.default_rng(0).permutation(len(MAGNITUDES))
    shuffled = torch.from_numpy(planted(1)[order]).to(torch.float64).requires_grad_(True)
    result = md.analyze(shuffled, magnitudes=torch.tensor(MAGNITUDES)[order], carriers=CARRIERS, params=FAST)
    assert_same_frame(result.fits, reference.fits)


def test_options_replace_fields_of_the_params(arrays):
    result = md.analyze(arrays["model"], params=FAST, measures=("eucl",), core_layers=(3, 4))
    assert result.params.measures == ("eucl",) and result.core_layers == [3, 4]
    assert set(result.fits["measure"]) == {"eucl"}


@pytest.mark.slow
def test_compare_on_arrays_equals_compare_in_the_store(filled, arrays):
    stored = md.compare(filled, "model", "model@random", params=FAST)
    direct = md.compare(arrays["model"], arrays["model@random"], params=FAST)
    assert (direct.model_a, direct.model_b) == ("model", "model@random")
    assert_same_frame(direct.table, stored.table)
    assert direct.summary_table().equals(stored.summary_table())
    assert stored.measures["eucl"].mean_delta > 0.2  # planted: 0.4 against 0
    # Plain arrays are told apart by their place.
    plain = md.compare(planted(1), planted(2, alpha=0.0), magnitudes=MAGNITUDES, carriers=CARRIERS, params=FAST)
    assert (plain.model_a, plain.model_b) == ("model A", "model B")
    assert_same_frame(plain.table, stored.table)


@pytest.mark.slow
def test_robustness_on_arrays_equals_the_controls_in_the_store(filled, arrays):
    params = md.ControlsParams(analysis=FAST, n_perm=200)
    stored = md.controls(filled, "model", params=params, variants=["model:other"])
    direct = md.controls(arrays["model"], params=params, random=arrays["model@random"],
                           variants={"model:other": arrays["model:other"]})
    for table in ("loo", "icc", "permutation"):
        assert_same_frame(getattr(direct.tables, table), getattr(stored.tables, table))
    assert_same_frame(direct.random.table, stored.random.table)
    assert_same_frame(direct.variants["model:other"].table, stored.variants["model:other"].table)
    assert stored.random_name == direct.random_name == "model@random"
    strip = ["control", "measure", "problem"]
    assert direct.verdict_table()[strip].equals(stored.verdict_table()[strip])


@pytest.mark.slow
def test_design_on_arrays_equals_the_design_in_the_store(filled, arrays):
    params = md.DesignParams(n_studies=40, n_points=3, n_boot=0, carrier_grid=(3,), magnitude_grid=(10,))
    stored = md.design(filled, "model", params=params)
    direct = md.design(arrays["model"], params=params)
    for table in ("h1", "e6", "ci_width"):
        assert_same_frame(getattr(direct, table), getattr(stored, table))
    assert direct.calibration == stored.calibration
    assert direct.summary() == pytest.approx(stored.summary(), nan_ok=True)


def test_depth_on_arrays_equals_the_depth_of_the_store(filled, arrays):
    for view in ("keep", "drop"):
        stored = md.depth(filled, "model", n_boot=50, massive=view)
        direct = md.depth(arrays["model"], n_boot=50, massive=view)
        assert_same_frame(direct.table, stored.table)
        assert direct.order == stored.order and direct.jumps == stored.jumps


def test_probe_on_arrays_equals_the_probes_of_the_store(filled, arrays):
    stored = md.probe(filled, "model", targets=("log",), n_boot=50)
    direct = md.probe(arrays["model"], targets=("log",), n_boot=50)
    for table in ("scores", "selectivity", "decoded", "decoded_scaling"):
        assert_same_frame(getattr(direct, table), getattr(stored, table))
    # The planted log-n axis is decodable: the held-out-magnitude R^2 is high at the planted layers.
    assert direct.score_table("magnitude", "log")["r2"].iloc[-1] > 0.5


def test_e5_on_arrays_equals_e5_in_the_store(filled, arrays):
    counts = pd.DataFrame({"number": np.arange(1, 40, dtype=np.int64),
                           "count": (5000 // np.arange(1, 40) ** 1.2).astype(np.int64)})
    source = FrequencySource("planted", counts, {"kind": "test"})
    stored = md.e5(filled, "model", source=source, n_boot=100)
    direct = md.e5(arrays["model"], source=source, n_boot=100)
    assert_same_frame(direct, stored)
    assert list(direct["layer"]) == [2, 3, 4] and direct["raw_rho"].notna().all()


def test_a_layer_and_its_rdm_are_the_stored_ones(filled, arrays):
    np.testing.assert_array_equal(md.layer_vectors(arrays["model"], 2), md.layer_vectors(filled, 2, "model"))
    stored = md.rdm(filled, 4, "model", metric="cosine")
    direct = md.rdm(arrays["model"], 4, metric="cosine")
    assert_same_frame(direct, stored)
    assert list(stored.index) == list(MAGNITUDES) and np.allclose(np.diag(stored), 0)
    # Euclidean distances between centroids on a line along log n grow with |log a - log b|.
    euclidean = md.rdm(arrays["model"], 5)
    assert euclidean.loc[1, 14] > euclidean.loc[1, 2]


def test_put_keeps_the_source_and_is_a_no_op_the_second_time(filled, arrays):
    record = filled.model_record("model")
    assert record.source == "test:planted" and record.n_blocks == N_LAYERS - 1
    assert record.layer_labels == arrays["model"].layer_labels
    again, set_name = filled.put("model", arrays["model"])
    assert again == record and set_name == "model-stimuli"
    assert filled.model_record("model@random").source == "array"


def test_put_takes_a_plain_array_with_its_labels(store):
    record, set_name = store.put("plain", planted(4), list(reversed(MAGNITUDES)), carriers=["a", "b", "c", "d"],
                                 layer_labels=[f"L{i}" for i in range(N_LAYERS)], n_blocks=4, source="mine")
    assert (record.source, record.n_blocks, record.layer_labels[-1]) == ("mine", 4, "L5")
    assert store.stimulus_set(set_name).carriers == ("a {n}", "b {n}", "c {n}", "d {n}")
    # Rows were given in descending magnitude: the store keeps them by magnitude.
    np.testing.assert_array_equal(store.read_layer("plain", set_name, 1).vectors, planted(4)[::-1][:, :, 1])


def test_nonfinite_layers_are_left_out_as_a_store_leaves_them_out(store):
    vectors = planted(5)
    vectors[3, 1, 2, 0] = np.nan
    activations = md.Activations(vectors, MAGNITUDES, carriers=CARRIERS, allow_nonfinite=True)
    store.put("overflowed", activations, )
    stored = md.analyze(store, "overflowed", params=FAST)
    direct = md.analyze(activations, params=FAST)
    assert direct.nonfinite_layers == stored.nonfinite_layers == {2: 1}
    assert_same_frame(direct.fits, stored.fits)
    assert math.isnan(direct.fit("eucl", 2).alpha)


def test_extract_stores_the_stimuli_and_the_analysis_reads_them(tiny_llama, store):
    stimuli = md.StimulusSet("small", CARRIERS[:3], tuple(range(1, 9)))
    first = md.extract(str(tiny_llama), stimuli, store=store, name="tiny", device="cpu")
    again = md.extract(str(tiny_llama), "small", store=store, name="tiny", device="cpu")
    assert (first.extracted, again.extracted, again.already_stored) == (24, 0, 24)
    result = md.analyze(store, "tiny", params=FAST, measures=("eucl",))
    assert result.stimuli == "small" and result.n_blocks == 3 and len(result.fits) == 5


def test_the_depth_of_every_token_of_prompts(tiny_llama):
    prompts = [carrier.replace("{n}", str(n)) for carrier in CARRIERS for n in (3, 40, 500)]
    result = md.depth_of_texts(str(tiny_llama), prompts, device="cpu", n_boot=20)
    assert result.n_blocks == 3 and [item.layer for item in result.layers] == [0, 1, 2, 3, 4]
    assert result.first_position_left_out == len(prompts)  # each prompt's BOS
    counts = result.table["n_vectors"]
    assert counts.nunique() == 1 and counts.iloc[0] >= 3 * len(prompts)  # every token but the BOS, at every layer
