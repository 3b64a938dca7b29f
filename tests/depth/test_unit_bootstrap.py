"""The depth bootstrap resamples the independent units (texts; magnitudes and carriers), not vectors.

Planted ground truth: vectors of one unit share a unit-level offset, as tokens of one text share
its topic. A bootstrap over vectors then gives intervals far too narrow (it misses the planted
mean most of the time, and is sure of a gamma_c the data cannot decide); the unit bootstrap's
intervals cover the truth at about their level.
"""

from __future__ import annotations

import numpy as np
import pytest

from magdash.depth_statistics.accumulate import (
    NUMBER_TOKEN_UNITS,
    LayerAccumulator,
    LayerSample,
    number_token_sample,
    samples_from_bytes,
    samples_to_bytes,
)
from magdash.depth_statistics.depth_params import DepthParams
from magdash.depth_statistics.diagnostics import analyze_samples, bootstrap_order, depth_summary
from magdash.depth_statistics.unit_bootstrap import ResampledUnits, default_units, unit_bootstrap_means
from magdash.errors import AnalysisError

CHUNKS, TOKENS = 15, 40


def chunked(rng: np.random.Generator, mean: float = 0.3, between: float = 0.03, within: float = 0.05):
    """Omega of CHUNKS x TOKENS tokens: each chunk's tokens share an offset (SD ``between``)."""
    chunk = np.repeat(np.arange(CHUNKS), TOKENS)
    return mean + rng.normal(0, between, CHUNKS)[chunk] + rng.normal(0, within, chunk.size), chunk[:, None]


def test_the_chunk_bootstrap_covers_a_planted_mean_that_the_token_bootstrap_misses():
    covered = {"token": 0, "chunk": 0}
    replicates = 80
    for replicate in range(replicates):
        rng = np.random.default_rng(replicate)
        values, chunks = chunked(rng)
        for name, units in (("token", default_units(values.size)), ("chunk", chunks)):
            means, counts = unit_bootstrap_means([values], [units], 300, rng)
            low, high = np.quantile(means[:, 0], [0.025, 0.975])
            covered[name] += low < 0.3 < high
    assert counts == (CHUNKS,)
    # Design effect 1 + 39 x 0.26 = 11: the token interval is ~3.3x too narrow and covers ~45%.
    assert covered["token"] / replicates < 0.6
    # 15 clusters: a percentile interval somewhat under its 95% (Cameron, Gelbach & Miller 2008).
    assert covered["chunk"] / replicates > 0.85


def test_the_gamma_c_interval_widens_on_chunk_level_steps_and_covers_the_planted_depth():
    """Two steps of m(gamma), 0.100 then 0.095 on average over chunks, each chunk's own steps
    scattered by 0.03: which is larger in 15 chunks is not decided. The sample's largest step is
    the second (gamma 1.0); the token bootstrap is sure of it, the chunk bootstrap is not."""
    rng = np.random.default_rng(3)
    chunk = np.repeat(np.arange(CHUNKS), 400)
    first, second = 0.10 + rng.normal(0, 0.03, CHUNKS), 0.095 + rng.normal(0, 0.03, CHUNKS)
    base = 0.2 + rng.normal(0, 0.01, CHUNKS)
    levels = [base, base + first, base + first + second]
    omegas = [level[chunk] + rng.normal(0, 0.05, chunk.size) for level in levels]
    gammas = [0.0, 0.5, 1.0]
    tokens = bootstrap_order(omegas, gammas, n_boot=1000, seed=1)
    chunks = bootstrap_order(omegas, gammas, units=[chunk[:, None]] * 3, unit_names=("chunk",), n_boot=1000, seed=1)
    assert tokens.transition.gamma_c == chunks.transition.gamma_c == 1.0  # the sample's; the truth is 0.5
    assert (tokens.transition.low, tokens.transition.high) == (1.0, 1.0)  # sure, and wrong
    assert (chunks.transition.low, chunks.transition.high) == (0.5, 1.0)  # covers the planted depth
    assert tokens.jumps[0].p_largest > 0.99 and chunks.jumps[0].p_largest < 0.9
    assert chunks.transition.units == ResampledUnits(("chunk",), (CHUNKS,)) and chunks.transition.units.few
    token_width = np.subtract(*tokens.intervals[1][::-1])
    chunk_width = np.subtract(*chunks.intervals[1][::-1])
    assert chunk_width > 3 * token_width  # each layer's m: the band widens too
    assert chunks.intervals[1][0] < 0.3 < chunks.intervals[1][1]  # the planted m at gamma 0.5: 0.2 + 0.1


def test_crossed_magnitudes_and_carriers_are_resampled_as_a_pigeonhole():
    """Number tokens: a carrier offset shared by the 26 vectors of each of 5 carriers. The vectors'
    interval of the mean misses the population's 0.3; magnitude x carrier resampling covers it."""
    rng = np.random.default_rng(4)
    magnitudes, carriers = 26, 5
    codes = np.column_stack([np.repeat(np.arange(magnitudes), carriers), np.tile(np.arange(carriers), magnitudes)])
    # Five carriers drawn from offsets of SD 0.02 around 0: these five happen to sit 0.01 above on average.
    values = 0.3 + np.array([0.03, 0.02, 0.025, -0.01, -0.015])[codes[:, 1]] + rng.normal(0, 0.01, len(codes))
    vectors, counts = unit_bootstrap_means([values], [default_units(len(codes))], 2000, rng)
    crossed, sizes = unit_bootstrap_means([values], [codes], 2000, rng)
    assert sizes == (magnitudes, carriers)
    vector_low, vector_high = np.quantile(vectors[:, 0], [0.025, 0.975])
    crossed_low, crossed_high = np.quantile(crossed[:, 0], [0.025, 0.975])
    assert not vector_low < 0.3 < vector_high
    assert crossed_low < 0.3 < crossed_high and crossed_high - crossed_low > 4 * (vector_high - vector_low)


def test_units_travel_with_their_vectors_through_accumulation_and_the_cache():
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(26, 5, 8)).astype(np.float32)
    vectors[3, 2, 0] = np.nan  # left out, and its units with it
    sample = number_token_sample(vectors, 2, "keep", 10.0)
    assert sample.unit_names == NUMBER_TOKEN_UNITS and sample.units.shape == (129, 2)
    assert [3, 2] not in sample.units.tolist() and [3, 1] in sample.units.tolist()
    restored = samples_from_bytes(samples_to_bytes([sample], 4))[0][0]
    np.testing.assert_array_equal(restored.units, sample.units)
    assert restored.unit_names == NUMBER_TOKEN_UNITS
    dropped = number_token_sample(vectors, 2, "standardise", 10.0)
    np.testing.assert_array_equal(dropped.units, sample.units)
    accumulator = LayerAccumulator(8, ("chunk",))
    with pytest.raises(AnalysisError, match="needs its vectors' units"):
        accumulator.add(vectors[0])
    with pytest.raises(AnalysisError, match="without unit_names"):
        LayerAccumulator(8).add(vectors[0], np.zeros((5, 1)))


def test_the_result_says_what_was_resampled():
    rng = np.random.default_rng(6)
    samples = []
    for layer in range(3):
        values, chunks = chunked(rng, mean=0.2 + 0.1 * (layer > 0))
        samples.append(LayerSample(layer, 64, values.size, np.ones(63), values.astype(np.float32),
                                   units=chunks, unit_names=("chunk",)))
    result = analyze_samples(samples, 2, DepthParams(n_boot=200))
    assert result.order.units.describe() == "15 chunks"
    summary = depth_summary(result)
    assert summary["gamma_c_units"] == {"chunk": 15}
    layer = summary["layers"][1]
    assert layer["omega_mean_low"] < layer["omega_mean"] < layer["omega_mean_high"]
    mixed = [samples[0], LayerSample(1, 64, 10, np.ones(9), np.zeros(10, dtype=np.float32))]
    with pytest.raises(AnalysisError, match="different units"):
        analyze_samples(mixed, 2, DepthParams(n_boot=10))
