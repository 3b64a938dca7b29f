"""Phase diagnostics on synthetic data with planted ground truth and hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from magdash.depth_statistics.accumulate import LayerAccumulator, LayerSample, samples_from_bytes, samples_to_bytes
from magdash.depth_statistics.depth_params import DepthParams
from magdash.depth_statistics.diagnostics import (
    analyze_samples,
    bootstrap_order,
    depth_fraction,
    depth_summary,
    largest_change,
    layer_frame,
)
from magdash.depth_statistics.omega import dip_test, isotropic_omega_mean, isotropic_omega_std, omega, summarize_omega
from magdash.depth_statistics.spectrum import (
    covariance_eigenvalues,
    effective_rank,
    fit_spectrum,
    gram_eigenvalues,
    isotropic_spectrum_baseline,
    marchenko_pastur_density,
    marchenko_pastur_edges,
    participation_ratio,
    tracy_widom_threshold,
)
from magdash.depth_statistics.texts import chunk_text
from magdash.depth_statistics.unit_bootstrap import ResampledUnits
from magdash.errors import AnalysisError

NULL_OMEGA = 1.0 - math.sqrt(2.0 / math.pi)


def sample_of(vectors: np.ndarray, layer: int = 0) -> LayerSample:
    accumulator = LayerAccumulator(vectors.shape[1])
    accumulator.add(vectors)
    return accumulator.finish(layer)


def fit_of(vectors: np.ndarray):
    sample = sample_of(vectors)
    return fit_spectrum(sample.eigenvalues, sample.dim, sample.count)


# -- Omega -------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [2, 16, 384, 4096])
def test_one_hot_vectors_have_maximal_omega(dim):
    rows = np.arange(5) % dim
    vectors = np.eye(dim)[rows] * np.array([[1.0], [-3.0], [0.5], [7.0], [-1e-3]])
    np.testing.assert_allclose(omega(vectors), 1.0 - 1.0 / math.sqrt(dim), rtol=1e-12)


def test_omega_hand_cases():
    # [3, 4]: ||h||_1 = 7, ||h||_2 = 5, d = 2.
    assert omega(np.array([3.0, 4.0])) == pytest.approx(1 - 7 / (math.sqrt(2) * 5))
    assert omega(np.array([2.0, -2.0, 2.0, -2.0])) == pytest.approx(0.0, abs=1e-15)
    assert omega(np.array([3.0, 4.0]) * 1e6) == pytest.approx(omega(np.array([3.0, 4.0])))
    assert np.isnan(omega(np.zeros(8)))
    assert omega(np.ones((2, 3, 5))).shape == (2, 3)


def test_isotropic_expectation_is_exact_and_tends_to_one_minus_sqrt_two_over_pi():
    assert isotropic_omega_mean(1) == pytest.approx(0.0, abs=1e-12)
    assert isotropic_omega_mean(2) == pytest.approx(1 - 2 * math.sqrt(2) / math.pi)  # E|cos| = 2/pi
    assert abs(isotropic_omega_mean(4096) - NULL_OMEGA) < 1e-4
    assert isotropic_omega_mean(64) < isotropic_omega_mean(4096) < NULL_OMEGA


def test_isotropic_gaussian_omega_matches_theory_in_high_dimension():
    rng = np.random.default_rng(1)
    values = omega(rng.standard_normal((2000, 2048)).astype(np.float32))
    assert abs(values.mean() - NULL_OMEGA) < 0.01
    assert abs(values.mean() - isotropic_omega_mean(2048)) < 4 * isotropic_omega_std(2048) / math.sqrt(2000)
    assert values.std() == pytest.approx(isotropic_omega_std(2048), rel=0.05)


def test_omega_summary_and_dip_test():
    rng = np.random.default_rng(2)
    unimodal = summarize_omega(rng.normal(0.3, 0.02, 3000))
    assert unimodal.dip_p > 0.05
    assert unimodal.n == 3000 and unimodal.histogram.sum() == 3000
    assert unimodal.quantiles[0.05] < unimodal.quantiles[0.5] < unimodal.quantiles[0.95]
    bimodal = np.concatenate([rng.normal(0.2, 0.01, 1500), rng.normal(0.6, 0.01, 1500)])
    assert dip_test(bimodal)[1] < 0.01
    assert all(math.isnan(v) for v in dip_test(np.array([0.1, 0.2, 0.3])))
    with_nan = summarize_omega(np.array([0.1, np.nan, 0.3, 0.2, 0.25]))
    assert with_nan.n == 4 and with_nan.mean == pytest.approx(0.2125)


# -- spectrum primitives -------------------------------------------------------------------


def test_effective_rank_and_participation_ratio_hand_cases():
    assert effective_rank(np.ones(7)) == pytest.approx(7.0)
    assert participation_ratio(np.ones(7)) == pytest.approx(7.0)
    assert effective_rank(np.array([5.0, 0.0, 0.0])) == pytest.approx(1.0)
    # [3, 1]: p = (0.75, 0.25).
    assert effective_rank(np.array([3.0, 1.0])) == pytest.approx(
        math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
    )
    assert participation_ratio(np.array([3.0, 1.0])) == pytest.approx(16 / 10)


@pytest.mark.parametrize("q", [0.25, 1.0, 3.0])
def test_marchenko_pastur_density_integrates_to_one(q):
    lower, upper = marchenko_pastur_edges(q, 2.0)
    assert (lower, upper) == pytest.approx((2 * (1 - math.sqrt(q)) ** 2, 2 * (1 + math.sqrt(q)) ** 2))
    mass = integrate.quad(lambda x: marchenko_pastur_density(np.array([x]), q, 2.0)[0], lower, upper,
                          limit=200, points=[lower + 1e-9])[0]
    assert mass == pytest.approx(1.0, abs=2e-3)
    assert marchenko_pastur_density(np.array([upper * 1.01, lower * 0.99 - 1e-9]), q, 2.0).max() == 0


def test_tracy_widom_threshold_sits_just_above_the_edge():
    edge = marchenko_pastur_edges(200 / 399)[1]
    threshold = tracy_widom_threshold(200, 399)
    assert edge < threshold < edge * 1.1
    assert tracy_widom_threshold(200, 399, 0.95) < threshold
    assert tracy_widom_threshold(2000, 3999) - marchenko_pastur_edges(2000 / 3999)[1] < threshold - edge


@pytest.mark.parametrize(("count", "dim"), [(120, 60), (60, 120)])
def test_pure_isotropic_noise_gives_no_spikes(count, dim):
    """False-spike rate at most 1% per layer over 200 seeds, for q < 1 and q > 1 (Gram path).

    (Over 3,000 seeds the rate is 0.53% and 0.57% at these sizes, 0.5-0.9% at d, N in 100-400:
    the nominal 99% Tracy-Widom level is kept. Sizes stay below 64 so BLAS runs unthreaded.)
    """
    false_spikes, sigma2 = 0, []
    for seed in range(200):
        fit = fit_of(3.0 * np.random.default_rng(seed).standard_normal((count, dim)))
        false_spikes += fit.n_spikes > 0
        sigma2.append(fit.sigma2)
    assert false_spikes <= 2
    assert np.mean(sigma2) == pytest.approx(9.0, rel=0.01)


@pytest.mark.parametrize(("k", "count", "dim"), [(2, 600, 100), (3, 600, 100), (5, 600, 100),
                                                 (8, 800, 100), (4, 150, 400)])
def test_k_prototypes_plus_noise_give_k_minus_one_spikes(k, count, dim):
    rng = np.random.default_rng(k)
    prototypes = 4.0 * rng.standard_normal((k, dim))
    labels = np.arange(count) % k
    vectors = prototypes[labels] + rng.standard_normal((count, dim))
    fit = fit_of(vectors)
    assert fit.n_spikes == k - 1
    assert fit.converged
    assert fit.sigma2 == pytest.approx(1.0, rel=0.05)  # spikes do not inflate the noise level
    assert fit.gap_rank == k - 1


def test_huge_spikes_do_not_inflate_sigma2():
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((1000, 150))
    vectors[:, :5] *= np.array([100.0, 60.0, 40.0, 30.0, 20.0])
    fit = fit_of(vectors)
    assert fit.n_spikes == 5
    assert fit.sigma2 == pytest.approx(1.0, rel=0.03)
    assert fit.mp_edge == pytest.approx(fit.sigma2 * (1 + math.sqrt(150 / 999)) ** 2)


def test_isotropic_spectrum_baseline_matches_simulation():
    rng = np.random.default_rng(6)
    for count, dim in [(400, 100), (100, 300)]:
        lam = sample_of(rng.standard_normal((count, dim))).eigenvalues
        baseline = isotropic_spectrum_baseline(dim, count)
        assert baseline["participation_ratio"] == pytest.approx(dim / (1 + dim / (count - 1)))
        assert participation_ratio(lam) == pytest.approx(baseline["participation_ratio"], rel=0.03)
        assert effective_rank(lam) == pytest.approx(baseline["effective_rank"], rel=0.02)


# -- accumulator -------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [40, 1100])
def test_accumulator_matches_np_cov_on_the_concatenated_data(dim):
    rng = np.random.default_rng(dim)
    data = (rng.standard_normal((3000, dim)) * rng.uniform(0.5, 3, dim) + rng.normal(0, 10, dim))
    data = data.astype(np.float32)
    accumulator = LayerAccumulator(dim)
    start = 0
    for size in rng.integers(1, 500, 100):
        accumulator.add(data[start:start + size])
        start += size
        if start >= len(data):
            break
    seen = data[:accumulator.total].astype(np.float64)
    expected = np.cov(seen, rowvar=False)
    covariance = accumulator.covariance()
    assert accumulator.count == len(seen) and not accumulator.keeps_vectors
    # Chunk products in float32 (documented), accumulated in float64.
    assert np.abs(covariance - expected).max() <= 1e-5 * np.abs(expected).max()
    np.testing.assert_allclose(accumulator.mean, seen.mean(axis=0), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(accumulator.omegas(), omega(seen), rtol=1e-5)


def test_gram_path_eigenvalues_match_the_covariance_path():
    rng = np.random.default_rng(8)
    vectors = (rng.standard_normal((60, 200)) + 5.0).astype(np.float32)
    accumulator = LayerAccumulator(200)
    accumulator.add(vectors[:25])
    accumulator.add(vectors[25:])
    assert accumulator.keeps_vectors
    gram = accumulator.eigenvalues()
    covariance = covariance_eigenvalues(np.cov(vectors.astype(np.float64), rowvar=False), 60)
    assert len(gram) == len(covariance) == 59
    np.testing.assert_allclose(gram, covariance, rtol=1e-9)
    np.testing.assert_allclose(gram_eigenvalues(vectors), gram)


def test_large_matrices_take_the_torch_path_with_the_same_eigenvalues():
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((1500, 1100))
    vectors[:, :2] *= 3000.0  # "massive activations": a spectrum spread over 1e7
    covariance = np.cov(vectors, rowvar=False)
    exact = np.linalg.eigvalsh(covariance)[::-1]
    np.testing.assert_allclose(covariance_eigenvalues(covariance, 1500), exact, rtol=1e-8)


@pytest.mark.parametrize(("distinct", "count", "chunks"), [(250, 1500, 3), (50, 300, 1)])
def test_a_rank_deficient_layer_keeps_only_its_rank_and_fits_no_rounding_bulk(distinct, count, chunks):
    """N vectors repeating ``distinct`` ones span distinct - 1 directions after centring: the
    covariance path (N > d, float32 products) and the Gram path (N < d) keep exactly those
    eigenvalues, not the float32 rounding of the null space (which, kept, became the MP bulk
    and made every real eigenvalue a spike: 634 eigenvalues and 249 spikes before the cut)."""
    rng = np.random.default_rng(3)
    prototypes = 0.1 * rng.standard_normal((distinct, 1024)).astype(np.float32)
    vectors = prototypes[np.r_[np.arange(distinct), rng.integers(0, distinct, count - distinct)]]
    accumulator = LayerAccumulator(1024)
    for part in np.array_split(vectors, chunks):
        accumulator.add(part)
    sample = accumulator.finish(0)
    assert len(sample.eigenvalues) == distinct - 1
    fit = fit_spectrum(sample.eigenvalues, sample.dim, sample.count)
    assert fit.n_spikes == 0
    mp_mean = max(1.0, 1024 / (count - 1))  # E_MP[x] of the non-zero eigenvalues at sigma^2 = 1
    assert fit.sigma2 == pytest.approx(float(np.mean(sample.eigenvalues)) / mp_mean, rel=1e-9)


def test_accumulator_rejects_bad_input():
    accumulator = LayerAccumulator(4)
    with pytest.raises(AnalysisError, match="shape"):
        accumulator.add(np.zeros((3, 5)))
    accumulator.add(np.zeros((0, 4)))
    assert accumulator.total == 0 and accumulator.eigenvalues().size == 0


def test_accumulator_sets_nonfinite_vectors_aside(rng):
    clean = rng.normal(size=(6, 4))
    poisoned = np.vstack([clean[:3], [[np.inf, 0, 0, 0]], clean[3:], np.full((1, 4), np.nan)])
    accumulator, reference = LayerAccumulator(4), LayerAccumulator(4)
    accumulator.add(poisoned)
    reference.add(clean)
    sample = accumulator.finish(2)
    assert (sample.count, sample.nonfinite) == (6, 2)
    np.testing.assert_allclose(sample.eigenvalues, reference.finish(2).eigenvalues)
    np.testing.assert_array_equal(sample.omegas, reference.finish(2).omegas)
    overflowed = LayerAccumulator(4)
    overflowed.add(np.full((3, 4), np.inf))
    assert (overflowed.finish(0).count, overflowed.finish(0).nonfinite) == (0, 3)


def test_layers_with_nonfinite_vectors_are_left_out_and_listed(rng):
    samples = []
    for layer in range(5):
        accumulator = LayerAccumulator(8)
        vectors = rng.normal(size=(40, 8))
        if layer == 3:
            vectors[5, 2] = np.inf
        accumulator.add(vectors)
        samples.append(accumulator.finish(layer))
    result = analyze_samples(samples, n_blocks=4, params=DepthParams(n_boot=50))
    assert [item.layer for item in result.layers] == [0, 1, 2, 4]
    assert result.nonfinite_layers == {3: 1}
    restored, _ = samples_from_bytes(samples_to_bytes(samples, 4))
    assert [s.nonfinite for s in restored] == [0, 0, 0, 1, 0]
    with pytest.raises(AnalysisError, match="every layer holds Inf/NaN"):
        analyze_samples([samples[3]], n_blocks=4, params=DepthParams(n_boot=0))


# -- depth, transitions, frames ----------------------------------------------------------------


def test_largest_change_hand_case():
    assert largest_change([0, 1 / 3, 2 / 3, 1], [0.0, 0.1, 0.5, 0.55]) == pytest.approx((2 / 3, 0.4))
    assert largest_change([0, 0.5, 1, math.nan], [0.3, 0.2, 0.25, 9.0]) == pytest.approx((0.5, -0.1))
    assert math.isnan(largest_change([0.0], [1.0])[0])
    assert depth_fraction(3, 12) == 0.25 and math.isnan(depth_fraction(13, 12))


def planted_model(n_blocks: int = 10, count: int = 400, dim: int = 64, seed: int = 9) -> list[LayerSample]:
    """Liquid (isotropic) below gamma = 0.5, solid (sparse, 4 prototypes) from 0.5 on,
    and a wild post-norm layer that must not count."""
    rng = np.random.default_rng(seed)
    prototypes = np.zeros((4, dim))
    for j in range(4):
        prototypes[j, rng.choice(dim, 3, replace=False)] = 10.0
    samples = []
    for layer in range(n_blocks + 2):
        gamma = layer / n_blocks
        noise = rng.standard_normal((count, dim))
        if layer == n_blocks + 1:
            vectors = 50.0 * noise * (rng.random((count, dim)) < 0.02)
            vectors[:, 0] += 1.0
        elif gamma < 0.5:
            vectors = noise * (1.0 + 0.01 * layer)
        else:
            vectors = prototypes[np.arange(count) % 4] + 0.3 * noise
        samples.append(sample_of(vectors, layer))
    return samples


def test_planted_transition_at_half_depth_is_found():
    result = analyze_samples(planted_model(), 10, DepthParams(n_boot=300, seed=1), model="planted")
    assert result.gamma_c == pytest.approx(0.5)
    assert result.order.change > 0.3
    assert result.order.low == pytest.approx(0.5) and result.order.high == pytest.approx(0.5)
    assert result.spikes.gamma_c == pytest.approx(0.5) and result.spikes.change == 3
    assert result.rank.gamma_c == pytest.approx(0.5)
    diagnostics = {d.layer: d for d in result.layers}
    assert math.isnan(diagnostics[11].gamma)
    assert diagnostics[0].spectrum.n_spikes == 0 and diagnostics[7].spectrum.n_spikes == 3
    assert abs(diagnostics[2].omega.mean - isotropic_omega_mean(64)) < 0.01


def test_bootstrap_interval_widens_for_a_weak_step_and_handles_unequal_layers():
    rng = np.random.default_rng(10)
    gammas = [0.0, 0.25, 0.5, 0.75, 1.0]
    levels = [0.20, 0.201, 0.203, 0.204, 0.206]
    weak = bootstrap_order([rng.normal(m, 0.05, 50 + 10 * i) for i, m in enumerate(levels)],
                           gammas, n_boot=400, seed=3).transition
    assert weak.low < weak.high and weak.n_boot == 400
    assert weak.units == ResampledUnits(("vector",), (90,))  # no units given: each vector its own
    strong = bootstrap_order([rng.normal(m, 0.01, 500) for m in [0.2, 0.2, 0.5, 0.5, 0.5]],
                             gammas, n_boot=200, seed=3).transition
    assert (strong.gamma_c, strong.low, strong.high) == (0.5, 0.5, 0.5)
    assert math.isnan(bootstrap_order([np.ones(5)], [0.0], n_boot=10).transition.low)


def test_frames_summary_and_cache_payload():
    samples = planted_model(n_blocks=4, count=120, dim=32)
    result = analyze_samples(samples, 4, DepthParams(n_boot=50), model="m")
    table = layer_frame(result)
    assert list(table["layer"]) == list(range(6))
    for column in ("gamma", "omega_mean", "omega_q05", "omega_q95", "dip_p", "n_spikes", "mp_edge",
                   "sigma2", "effective_rank", "participation_ratio"):
        assert column in table
    assert table["baseline_omega_mean"].to_numpy() == pytest.approx(isotropic_omega_mean(32))
    summary = depth_summary(result)
    # The keys the JSON always had stay; the new ones come beside them.
    assert set(summary) == {"model", "gamma_c", "layers", "gamma_c_low", "gamma_c_high", "massive",
                            "massive_ratio", "skip_embedding_step", "jumps", "first_position_left_out",
                            "gamma_c_units"}
    assert set(summary["layers"][0]) == {"layer", "gamma", "omega_mean", "dip_p", "n_spikes", "mp_edge",
                                         "sigma2", "effective_rank", "participation_ratio", "dim",
                                         "mp_converged", "mp_cap", "massive_dims", "massive_share",
                                         "omega_mean_low", "omega_mean_high", "mp_note"}
    assert summary["gamma_c_units"] == {"vector": 120}
    assert len(summary["jumps"]) == 3 and summary["jumps"][0]["gamma"] == summary["gamma_c"]
    restored, n_blocks = samples_from_bytes(samples_to_bytes(samples, 4))
    assert n_blocks == 4 and len(restored) == len(samples)
    for before, after in zip(samples, restored, strict=True):
        assert (before.layer, before.dim, before.count) == (after.layer, after.dim, after.count)
        np.testing.assert_array_equal(before.eigenvalues, after.eigenvalues)
        np.testing.assert_array_equal(before.omegas, after.omegas)
        np.testing.assert_array_equal(before.raw.abs_mean, after.raw.abs_mean)
        np.testing.assert_array_equal(before.raw.square_mean, after.raw.square_mean)
        assert before.raw.count == after.raw.count


# -- chunking ----------------------------------------------------------------------------------


def test_chunk_text_by_characters_keeps_every_word_in_order():
    text = "One two three. Four five six seven!\n\nEight nine? " + "x" * 50 + " ten."
    chunks = chunk_text(text, 10, chars_per_token=1.0)  # budget 9 "tokens" = 9 characters
    assert all(len(chunk) <= 9 or " " not in chunk for chunk in chunks)
    assert "".join(" ".join(chunks).split()) == "".join(text.split())
    assert "xxxxxxxxx" in chunks


def test_chunk_text_with_a_token_counter_packs_sentences():
    def words(pieces):
        return [len(piece.split()) for piece in pieces]

    text = "a b c. d e. f g h i. j."
    assert chunk_text(text, 6, count_tokens=words) == ["a b c. d e.", "f g h i. j."]
    assert chunk_text(text, 100, count_tokens=words) == [text]
    with pytest.raises(AnalysisError):
        chunk_text(text, 0)
