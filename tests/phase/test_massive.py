"""Massive-activation dimensions, the drop/standardise views, capped spike counts and the jumps,
on planted data whose answers are known."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from magdash.cli import main
from magdash.errors import AnalysisError
from magdash.jsonio import to_jsonable
from magdash.phase.accumulate import LayerSample, view_sample
from magdash.phase.diagnostics import analyze_samples, layer_frame, phase_summary
from magdash.phase.massive_dims import MASSIVE_RATIO, Adjustment, DimensionStats, find_massive, massive_share
from magdash.phase.omega import isotropic_omega_mean
from magdash.phase.phase_params import PhaseParams
from magdash.phase.spectrum import fit_spectrum
from magdash.presentation import depth_figures as df
from magdash.runs.depth_runs import phase_from_store, phase_from_texts
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES

PLANTED = {3: 60.0, 77: 40.0, 150: 30.0, 201: 25.0}  # dimension -> offset, about 50x the median |h_j|


def with_massive(count: int, dim: int, seed: int, planted=PLANTED) -> np.ndarray:
    """Isotropic N(0, 1) noise plus a constant offset (SD still 1) on a few dimensions."""
    vectors = np.random.default_rng(seed).standard_normal((count, dim))
    for index, offset in planted.items():
        vectors[:, index] += offset
    return vectors.astype(np.float32)


def test_the_detector_finds_exactly_the_planted_dimensions_largest_first():
    stats = DimensionStats.of(with_massive(2000, 256, seed=1))
    assert find_massive(stats.abs_mean).tolist() == [3, 77, 150, 201]
    expected_share = sum(o**2 + 1 for o in PLANTED.values()) / (sum(o**2 + 1 for o in PLANTED.values()) + 252)
    assert massive_share(stats.square_mean, find_massive(stats.abs_mean)) == pytest.approx(expected_share, rel=0.01)
    # Pure noise has none, at any reasonable multiple, and an all-zero layer has no scale.
    noise = DimensionStats.of(np.random.default_rng(2).standard_normal((130, 576)))
    assert find_massive(noise.abs_mean, 2.0).size == 0
    assert find_massive(np.zeros(8)).size == 0


def test_raw_omega_is_far_from_the_gaussian_value_and_the_adjusted_views_are_not():
    vectors = with_massive(2000, 256, seed=3)
    raw = analyze_samples([view_sample(vectors, 0, "keep", MASSIVE_RATIO)], 1, PhaseParams(n_boot=0))
    assert raw.layers[0].omega.mean > 0.6  # four coordinates make it look "solid"
    assert raw.layers[0].massive == (3, 77, 150, 201) and raw.layers[0].massive_share > 0.9
    for mode, dim in (("drop", 252), ("standardise", 256)):
        params = PhaseParams(n_boot=0, massive=mode)
        result = analyze_samples([view_sample(vectors, 0, params.massive, params.massive_ratio)], 1, params)
        layer = result.layers[0]
        assert layer.dim == dim and layer.count == 2000
        assert abs(layer.omega.mean - isotropic_omega_mean(dim)) < 0.01
        assert abs(layer.omega.mean - 0.2021) < 0.01
        assert layer.massive == (3, 77, 150, 201)  # reported from the raw vectors in every view
        assert layer.spectrum.converged and layer.spectrum.n_spikes == 0


def test_the_view_without_massive_dimensions_is_drawn_only_where_it_differs_from_the_raw_one():
    """Depth draws the adjusted view beside the raw one; dropping massive dimensions where there
    are none would draw every curve twice, the same (standardising always changes the vectors)."""
    params = PhaseParams(n_boot=0)
    planted = analyze_samples([view_sample(with_massive(400, 256, seed=4), 0, "keep", MASSIVE_RATIO)], 1, params)
    noise = np.random.default_rng(5).standard_normal((400, 256)).astype(np.float32)
    plain = analyze_samples([view_sample(noise, 0, "keep", MASSIVE_RATIO)], 1, params)
    assert not df.adjusted_view_differs({"trained": plain}, "drop")
    assert df.adjusted_view_differs({"trained": plain}, "standardise")
    assert df.adjusted_view_differs({"trained": plain, "random control": planted}, "drop")  # any series


def test_standardise_z_scores_and_drops_constant_dimensions():
    vectors = np.array([[1.0, 5.0, 2.0], [3.0, 5.0, 4.0], [5.0, 5.0, 9.0]], dtype=np.float32)
    adjustment = Adjustment.for_stats("standardise", DimensionStats.of(vectors))
    z = adjustment.apply(vectors)
    assert adjustment.dim(3) == 2  # dimension 1 is constant
    np.testing.assert_allclose(z[:, 0], [-1.0, 0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(z.std(axis=0, ddof=1), [1.0, 1.0], atol=1e-6)
    assert Adjustment.for_stats("keep", DimensionStats.of(vectors)).apply(vectors) is vectors
    with pytest.raises(AnalysisError, match="massive="):
        PhaseParams(massive="remove")
    with pytest.raises(AnalysisError, match="above 1"):
        PhaseParams(massive_ratio=0.5)


UNFITTED = ("sigma2", "mp_edge", "tw_margin", "largest_gap")


def test_a_capped_marchenko_pastur_fit_reports_no_fit_no_count_no_edge_and_says_why():
    # A geometric spectrum has no bulk: every round of the robust fit calls more spikes.
    eigenvalues = 0.8 ** np.arange(129)
    fit = fit_spectrum(eigenvalues, 576, 130)
    assert fit.cap == 64 and fit.n_spikes == 64 and fit.capped and not fit.converged
    assert math.isnan(fit.spike_count) and all(math.isnan(getattr(fit, name)) for name in UNFITTED)
    assert fit.unfitted_reason == (f"not fitted: the stopping rule hit its cap after {fit.iterations} iterations "
                                   "(half of the 129 non-zero eigenvalues called spikes), so there is no bulk")
    assert fit.iterations > 1 and fit.gap_rank >= 1 and fit.q == pytest.approx(576 / 129)
    sample = LayerSample(0, 576, 130, eigenvalues, np.full(130, 0.3, dtype=np.float32))
    flat = LayerSample(1, 576, 130, np.ones(129), np.full(130, 0.3, dtype=np.float32))
    result = analyze_samples([sample, flat], 1, PhaseParams(n_boot=0))
    table = layer_frame(result)
    assert math.isnan(table.loc[0, "n_spikes"]) and not table.loc[0, "mp_converged"]
    assert table.loc[0, list(UNFITTED)].isna().all() and table.loc[1, list(UNFITTED)].notna().all()
    assert table.loc[0, "mp_cap"] == 64 and table.loc[1, "n_spikes"] == 0
    layers = json.loads(json.dumps(to_jsonable(phase_summary(result)), allow_nan=False))["layers"]  # as --json prints
    assert layers[0]["n_spikes"] is None and layers[0]["mp_converged"] is False and layers[0]["mp_cap"] == 64
    assert layers[0]["sigma2"] is None and layers[0]["mp_edge"] is None and layers[0]["mp_note"] == fit.unfitted_reason
    assert layers[1]["n_spikes"] == 0 and layers[1]["mp_converged"] is True and layers[1]["mp_note"] == ""
    assert layers[1]["sigma2"] == pytest.approx(129 / 576) and layers[1]["mp_edge"] > 1.0  # mean / E_MP = 1 / q
    assert math.isnan(result.spikes.gamma_c)  # a missing count takes no part in a transition
    # The chart: no fitted density, edge, threshold or spike count, and the reason in the subtitle.
    spec = json.dumps(df.spectrum_figure({"trained": result}, 0).to_dict(), ensure_ascii=False)
    assert "no Marchenko-Pastur fit" in spec and fit.unfitted_reason in spec
    assert "sigma² =" not in spec and "bulk edge lambda+" not in spec and "spike(s) above" not in spec
    fitted = json.dumps(df.spectrum_figure({"trained": result}, 1).to_dict(), ensure_ascii=False)
    assert "sigma² = 0.2240" in fitted and "MP bulk edge lambda+" in fitted and "0 spike(s) above" in fitted
    [caveat] = df.spectrum_caveats({"trained": result})
    assert caveat.text.startswith("Marchenko–Pastur fit not usable at layer(s) 0 ")


def test_a_fit_calling_most_eigenvalues_spikes_is_not_drawn_as_a_bulk_with_spikes():
    rng = np.random.default_rng(0)
    bulk = rng.uniform(0.8, 1.2, 79)
    eigenvalues = np.sort(np.concatenate([bulk, np.geomspace(50, 500, 50)]))[::-1]
    fit = fit_spectrum(eigenvalues, 576, 130)
    assert fit.converged and fit.n_spikes == 50 > df.SPIKE_SHARE * fit.rank
    result = analyze_samples([LayerSample(0, 576, 130, eigenvalues, np.full(130, 0.3, dtype=np.float32))], 1,
                             PhaseParams(n_boot=0))
    spec = json.dumps(df.spectrum_figure({"trained": result}, 0).to_dict(), ensure_ascii=False)
    assert "does not describe it" in spec and "50 of 129 non-zero eigenvalues above the threshold" in spec
    assert "sigma² =" not in spec and "bulk edge lambda+" not in spec and "spike(s) above" not in spec


def omega_layers(levels, count=400, seed=5, sd=0.02):
    rng = np.random.default_rng(seed)
    return [LayerSample(i, 64, count, np.ones(63), rng.normal(m, sd, count).astype(np.float32))
            for i, m in enumerate(levels)]


def test_top_three_jumps_and_leaving_the_embedding_step_out():
    # The embeddings -> block 1 step (0.2 -> 0.45) is larger than the one inside (at gamma 0.6).
    levels = [0.20, 0.45, 0.46, 0.46, 0.47, 0.47, 0.62, 0.63, 0.63, 0.64, 0.66]
    samples = omega_layers(levels)
    result = analyze_samples(samples, 10, PhaseParams(n_boot=300, seed=2))
    assert result.gamma_c == pytest.approx(0.1)
    assert [j.gamma for j in result.jumps] == pytest.approx([0.1, 0.6, 1.0])
    first, second, _ = result.jumps
    assert first.low < first.change < first.high and first.p_largest == 1.0
    assert second.low < 0.15 < second.high and second.p_largest == 0.0
    skipped = analyze_samples(samples, 10, PhaseParams(n_boot=300, seed=2, skip_embedding_step=True))
    assert skipped.gamma_c == pytest.approx(0.6) and skipped.jumps[0].gamma == pytest.approx(0.6)
    assert skipped.order.low == pytest.approx(0.6) and 0.1 not in [j.gamma for j in skipped.jumps]
    assert phase_summary(skipped)["skip_embedding_step"] is True
    # Two equal steps: each is the largest in a good share of the resamples, neither in all.
    tie = analyze_samples(omega_layers([0.2, 0.3, 0.3, 0.4, 0.4], sd=0.2, seed=7), 4, PhaseParams(n_boot=300, seed=2))
    shares = sorted(j.p_largest for j in tie.jumps[:2])
    assert shares[0] > 0.2 and shares[1] < 0.8 and sum(shares) == pytest.approx(1.0)


@pytest.mark.slow
def test_the_cli_drops_the_massive_dimensions_of_stored_vectors(store, capsys):
    rng = np.random.default_rng(7)
    n_mag, n_car, dim = len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 48
    layers = rng.standard_normal((n_mag, n_car, 3, dim))
    layers[:, :, 1:, 5] += 80.0  # massive from block 1 on
    layers[:, :, 1:, 9] -= 60.0
    store.import_arrays("massive", layers.astype(np.float32), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS,
                        layer_labels=["embeddings", "block 1", "block 2"])
    outputs = {}
    for mode in ("keep", "drop"):
        capsys.readouterr()
        assert main(["depth", "--model", "massive", "--store", str(store.path), "--massive", mode,
                     "--n-boot", "50", "--json"]) == 0
        outputs[mode] = json.loads(capsys.readouterr().out)
    raw, dropped = outputs["keep"], outputs["drop"]
    assert raw["massive"] == "keep" and dropped["massive"] == "drop"
    assert [row["massive_dims"] for row in raw["layers"]] == [[], [5, 9], [5, 9]]  # largest first
    assert [row["dim"] for row in dropped["layers"]] == [48, 46, 46]
    assert raw["layers"][1]["omega_mean"] > 0.5 and raw["gamma_c"] == pytest.approx(0.5)
    assert all(abs(row["omega_mean"] - isotropic_omega_mean(row["dim"])) < 0.02 for row in dropped["layers"])
    assert main(["depth", "--model", "massive", "--store", str(store.path), "--massive", "standardise"]) == 0
    out = capsys.readouterr().out
    assert "every dimension z-scored" in out and "jump 1: to gamma 0.500" in out
    assert main(["depth", "--model", "massive", "--store", str(store.path), "--massive-ratio", "1"]) == 2
    assert "above 1" in capsys.readouterr().err
    # The views are cached apart: the raw result is not served for the dropped one.
    assert phase_from_store(store, "massive", params=PhaseParams(n_boot=0, massive="drop")).layers[1].dim == 46


def test_all_token_views_take_a_second_pass_and_reuse_the_cached_raw_one(tiny_llama, store, monkeypatch):
    import magdash.runs.depth_runs as run

    text = " ".join(f"The count reached {n}. There are {n} items." for n in range(1, 41))
    options = dict(store=store, max_length=64, device="cpu")
    raw = phase_from_texts(str(tiny_llama), text, params=PhaseParams(n_boot=0), **options)
    passes = []
    original = run.all_token_samples
    monkeypatch.setattr(run, "all_token_samples", lambda *a, **k: passes.append(k) or original(*a, **k))
    standardised = phase_from_texts(str(tiny_llama), text, params=PhaseParams(n_boot=0, massive="standardise"),
                                    **options)
    assert len(passes) == 1 and passes[0]["adjustments"]  # only the transformed pass ran
    for before, after in zip(raw.samples, standardised.samples, strict=True):
        assert after.count == before.count and after.dim == before.dim
        np.testing.assert_array_equal(after.raw.abs_mean, before.raw.abs_mean)
    again = phase_from_texts(str(tiny_llama), text, params=PhaseParams(n_boot=0, massive="standardise"), **options)
    assert len(passes) == 1  # cached
    np.testing.assert_array_equal(again.samples[1].omegas, standardised.samples[1].omegas)
