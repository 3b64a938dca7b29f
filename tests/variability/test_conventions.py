"""The paper's conventions reproduce the paper's procedure exactly; magdash's differ where stated.

The reference below is an implementation of the procedure of the paper's script (Cacioli 2026,
arXiv 2604.04469; ``scalar_variability_v2.py`` and ``scalar_variability_exploratory.py``),
written here from its description as plain loops over layers, magnitudes and resamples with
scipy's ``linregress``, ``spearmanr``, ``ttest_1samp`` and ``wilcoxon``. It shares no code with
magdash. ``paper`` conventions must equal it to 1e-12 in every field, confidence intervals
included, on planted data with an outlier and a context-free layer 0.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from magdash.cli import main
from magdash.errors import AnalysisError
from magdash.frequency import e5_correlation, e5_summary
from magdash.runs.analysis_runs import analysis_key, analyze, compare
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.variability.analysis import run_analysis
from magdash.variability.analysis_params import AnalysisParams, FitRules
from magdash.variability.compare import compare_models
from magdash.variability.conventions import CONVENTIONS, get_conventions
from magdash.variability.fits import compare_noise_models, resample_counts
from magdash.variability.hypotheses import depth_trend_all_layers

MAGNITUDES = np.array(PAPER_MAGNITUDES, dtype=np.float64)
N_BLOCKS = 6
CORE = [3, 4, 5]
N_BOOT = 2000
OUTLIER_LAYER, OUTLIER_INDEX = 4, 14  # magnitude 50 at a core layer
BOUNDARY_INDICES = [8, 9, 19]  # magnitudes 9, 10 and 100, as the paper's script names them
TOLERANCE = 1e-12


# -- planted data ----------------------------------------------------------------------


def planted(seed: int = 5, *, context_free_embeddings: bool = True, dim: int = 12) -> np.ndarray:
    """(26, 5, 7, dim) float64 vectors: V ~ n^alpha_l with a different alpha per block layer,
    sentence offsets (so V_residual differs from V_eucl) and one outlying magnitude (50) at
    core layer 4. Layer 0 is a context-free embedding: each magnitude's five vectors are
    identical, made of integers whose sum over magnitudes is zero, so every mean is exact and
    V is exactly 0 whichever way it is summed.
    """
    rng = np.random.default_rng(seed)
    n_layers = N_BLOCKS + 1
    x = np.empty((MAGNITUDES.size, 5, n_layers, dim))
    half = rng.integers(-20, 21, size=(13, dim)).astype(np.float64)
    embeddings = np.concatenate([half, -half])
    x[:, :, 0] = embeddings[:, None, :]
    if not context_free_embeddings:
        x[:, :, 0] += rng.normal(size=(MAGNITUDES.size, 5, dim)) * 0.01
    for layer in range(1, n_layers):
        alpha = -0.3 + 0.1 * layer
        means = np.outer(np.log(MAGNITUDES), rng.normal(size=dim)) * 3.0 + rng.normal(size=dim)
        sentences = rng.normal(size=(5, dim)) * 0.5
        noise = rng.normal(size=(MAGNITUDES.size, 5, dim)) * (MAGNITUDES**alpha)[:, None, None]
        if layer == OUTLIER_LAYER:
            noise[OUTLIER_INDEX] *= 8.0
        x[:, :, layer] = means[:, None, :] + sentences[None] + noise
    return x


def magdash_paper(x: np.ndarray, **overrides):
    params = AnalysisParams(**{"conventions": "paper", "n_boot": N_BOOT, **overrides})
    layers = ((f"layer {i}", x[:, :, i]) for i in range(x.shape[2]))
    return run_analysis(layers, MAGNITUDES, n_blocks=N_BLOCKS, params=params, n_layers=x.shape[2])


# -- the reference: the paper's procedure as plain loops ---------------------------------


def reference_measures(x: np.ndarray) -> dict[str, np.ndarray]:
    n_mag, n_car, n_layers, _ = x.shape
    out = {name: np.zeros((n_mag, n_layers)) for name in ("eucl", "residual", "proj", "on_axis", "off_axis")}
    for layer in range(n_layers):
        vectors = x[:, :, layer, :]
        sentence_means = vectors.mean(axis=0)
        sentence_effects = sentence_means - sentence_means.mean(axis=0)
        adjusted = vectors - sentence_effects[None]
        centroids = vectors.mean(axis=1)
        _, _, vt = np.linalg.svd(centroids - centroids.mean(axis=0), full_matrices=False)
        pc1 = vt[0]
        for m in range(n_mag):
            deviations = vectors[m] - vectors[m].mean(axis=0)
            out["eucl"][m, layer] = np.mean([np.linalg.norm(row) for row in deviations])
            adjusted_deviations = adjusted[m] - adjusted[m].mean(axis=0)
            out["residual"][m, layer] = np.mean([np.linalg.norm(row) for row in adjusted_deviations])
            on_axis = deviations @ pc1
            out["proj"][m, layer] = on_axis.std(ddof=1)
            out["on_axis"][m, layer] = on_axis.var(ddof=1)
            off = deviations - np.outer(on_axis, pc1)
            out["off_axis"][m, layer] = np.mean([row @ row for row in off])
    return out


def reference_fit(values, *, outlier_rule: bool, bootstrap: bool, keep=None, seed: int = 42) -> dict:
    """The paper's scaling fit: optional 3x-median rule, V > 0, >= 5 points, linregress,
    Theil-Sen over pairs, bootstrap with one fresh RandomState(seed) per series."""
    mags, v = MAGNITUDES, np.asarray(values)
    if keep is not None:
        mags, v = mags[keep], v[keep]
    n_outliers = 0
    if outlier_rule:
        median = np.median(v)
        if median > 0:
            inside = v <= 3.0 * median
            n_outliers = int((~inside).sum())
            mags, v = mags[inside], v[inside]
    positive = v > 0
    nan = math.nan
    result = {"alpha": nan, "intercept": nan, "r2": nan, "p": nan, "se": nan, "alpha_theil_sen": nan,
              "ci_low": nan, "ci_high": nan, "n_points": int(positive.sum()), "n_outliers": n_outliers}
    if positive.sum() < 5:
        return result
    log_n, log_v = np.log(mags[positive]), np.log(v[positive])
    line = stats.linregress(log_n, log_v)
    slopes = []
    for i in range(len(log_n)):
        for j in range(i + 1, len(log_n)):
            if log_n[j] != log_n[i]:
                slopes.append((log_v[j] - log_v[i]) / (log_n[j] - log_n[i]))
    result.update(alpha=line.slope, intercept=line.intercept, r2=line.rvalue**2, p=line.pvalue, se=line.stderr,
                  alpha_theil_sen=float(np.median(slopes)))
    if bootstrap:
        rng = np.random.RandomState(seed)
        boot = []
        for _ in range(N_BOOT):
            index = rng.randint(0, len(log_n), len(log_n))
            boot.append(stats.linregress(log_n[index], log_v[index]).slope)
        result.update(ci_low=np.percentile(boot, 2.5), ci_high=np.percentile(boot, 97.5))
    return result


def reference_noise_models(values) -> dict[str, dict]:
    """The paper's AICc: n log(SS/n + 1e-30) + 2k + 2k(k+1)/max(n-k-1, 1), k = 1, 1, 2, 2."""
    v = np.asarray(values)
    positive = v > 0
    if positive.sum() < 5:
        return {}
    mags, v = MAGNITUDES[positive], v[positive]
    n = len(v)

    def aicc(ss, k):
        return n * np.log(ss / n + 1e-30) + 2 * k + 2 * k * (k + 1) / max(n - k - 1, 1)

    rows = {}
    c = v.mean()
    rows["constant"] = {"k": math.nan, "c": c, "alpha": math.nan, "rss": ((v - c) ** 2).sum(), "n_params": 1}
    k = (v / mags).mean()
    rows["scalar"] = {"k": k, "c": math.nan, "alpha": math.nan, "rss": ((v - k * mags) ** 2).sum(), "n_params": 1}
    line = stats.linregress(np.log(mags), v)
    rows["log_scalar"] = {"k": line.slope, "c": line.intercept, "alpha": math.nan,
                          "rss": ((v - (line.slope * np.log(mags) + line.intercept)) ** 2).sum(), "n_params": 2}
    power = stats.linregress(np.log(mags), np.log(v))
    predicted = np.exp(power.intercept) * mags**power.slope
    rows["power_law"] = {"k": np.exp(power.intercept), "c": math.nan, "alpha": power.slope,
                         "rss": ((v - predicted) ** 2).sum(), "n_params": 2}
    for row in rows.values():
        row["aicc"] = aicc(row["rss"], row["n_params"])
        row["n_points"] = n
    best = min(row["aicc"] for row in rows.values())
    total = sum(math.exp(-0.5 * (row["aicc"] - best)) for row in rows.values())
    for row in rows.values():
        row["delta_aicc"] = row["aicc"] - best
        row["weight"] = math.exp(-0.5 * (row["aicc"] - best)) / total
    return rows


def reference_analysis(x: np.ndarray, *, bootstrap: bool = True) -> dict:
    """The paper's procedure in plain loops; ``bootstrap=False`` leaves the core layers' CIs out
    (the 10,000-resample loops are most of its time) for tests that compare no interval."""
    measures = reference_measures(x)
    n_layers = x.shape[2]
    out = {"fits": {}, "noise": {}, "hypotheses": {}, "e3": {}}
    for measure in ("eucl", "residual", "proj"):
        rule = measure != "proj"
        fits = [reference_fit(measures[measure][:, layer], outlier_rule=rule, bootstrap=bootstrap and layer in CORE)
                for layer in range(n_layers)]
        out["fits"][measure] = fits
        out["noise"][measure] = [reference_noise_models(measures[measure][:, layer]) for layer in range(n_layers)]
        alphas = np.array([fit["alpha"] for fit in fits])
        core = alphas[CORE]
        t1, p1 = stats.ttest_1samp(core, 0.0)
        t2, p2 = stats.ttest_1samp(core, 1.0)
        rho, rho_p = stats.spearmanr(range(n_layers), alphas)
        out["hypotheses"][measure] = {
            "mean_alpha": core.mean(), "median_alpha": np.median(core),
            "positive_layers": int((core > 0).sum()), "h1": bool((core > 0).sum() > len(CORE) / 2),
            "h1_t": t1, "h1_p": p1,
            "in_window_layers": int(((core >= 0.8) & (core <= 1.2)).sum()), "h2_t": t2, "h2_p": p2,
            "below_one_layers": int((core < 1).sum()), "h3": bool((core < 1).sum() > len(CORE) / 2),
            "h4_rho": rho, "h4_p": rho_p, "h4": bool(rho_p < 0.05),
        }
        keep = np.ones(MAGNITUDES.size, dtype=bool)
        keep[BOUNDARY_INDICES] = False
        without = [reference_fit(measures[measure][:, layer], outlier_rule=False, bootstrap=False, keep=keep)["alpha"]
                   for layer in CORE]
        out["e3"][measure] = {"alpha_with": list(core), "alpha_without": without,
                              "mean_alpha_with": core.mean(), "mean_alpha_without": np.mean(without),
                              "mean_shift": np.mean(without) - core.mean()}
    on, off = [], []
    for layer in CORE:
        for series, target in ((measures["on_axis"][:, layer], on), (measures["off_axis"][:, layer], off)):
            positive = series > 0
            target.append(stats.linregress(np.log(MAGNITUDES[positive]), np.log(series[positive])).slope
                          if positive.sum() >= 5 else math.nan)
    wilcoxon = stats.wilcoxon(on, off)
    out["e4"] = {"alpha_on": on, "alpha_off": off, "mean_alpha_on": np.nanmean(on), "mean_alpha_off": np.nanmean(off),
                 "ratio": np.nanmean(on) / np.nanmean(off), "wilcoxon_statistic": wilcoxon.statistic,
                 "wilcoxon_p": wilcoxon.pvalue}
    raw = out["fits"]["eucl"]
    differences = [abs(fit["alpha"] - fit["alpha_theil_sen"]) for fit in raw if not math.isnan(fit["alpha"])]
    core_mean = {m: np.mean([out["fits"][m][layer]["alpha"] for layer in CORE]) for m in ("eucl", "residual", "proj")}
    out["checks"] = {"ols_theil_sen": np.mean(differences),
                     "raw_residual": abs(core_mean["eucl"] - core_mean["residual"]),
                     "raw_proj": abs(core_mean["eucl"] - core_mean["proj"])}
    out["values"] = measures
    return out


# -- comparison helpers ----------------------------------------------------------------


def assert_same(actual, expected, where: str) -> None:
    actual, expected = float(actual), float(expected)
    if math.isnan(expected):
        assert math.isnan(actual), f"{where}: expected no value, got {actual}"
        return
    assert abs(actual - expected) <= TOLERANCE * max(1.0, abs(expected)), f"{where}: {actual!r} != {expected!r}"


# -- the equality tests ----------------------------------------------------------------


@pytest.fixture(scope="module")
def planted_pair():
    x = planted()
    return x, magdash_paper(x), reference_analysis(x)


def test_the_planted_data_has_what_the_test_needs(planted_pair):
    x, result, reference = planted_pair
    assert np.all(result.values["eucl"][0] == 0) and np.all(reference["values"]["eucl"][:, 0] == 0)
    assert result.fit("eucl", OUTLIER_LAYER).n_outliers == 1  # magnitude 50 is dropped by the 3x rule
    assert reference["fits"]["eucl"][OUTLIER_LAYER]["n_outliers"] == 1
    assert all(math.isnan(reference["fits"][m][0]["alpha"]) for m in ("eucl", "residual", "proj"))


def test_paper_mode_equals_the_reference_in_every_fit_field(planted_pair):
    x, result, reference = planted_pair
    for measure in ("eucl", "residual", "proj"):
        np.testing.assert_allclose(result.values[measure], reference["values"][measure].T, rtol=1e-13, atol=0)
        for layer in range(x.shape[2]):
            fit = result.fit(measure, layer)
            for name, expected in reference["fits"][measure][layer].items():
                assert_same(getattr(fit, name), expected, f"{measure} layer {layer} {name}")
            assert math.isfinite(fit.ci_low) == (layer in CORE)


def test_paper_mode_equals_the_reference_in_hypotheses_e3_e4_and_checks(planted_pair):
    x, result, reference = planted_pair
    for measure in ("eucl", "residual", "proj"):
        hypotheses = result.hypotheses[measure]
        for name, expected in reference["hypotheses"][measure].items():
            assert_same(getattr(hypotheses, name), expected, f"{measure} {name}")
        assert hypotheses.h4_layers == list(range(x.shape[2]))
        assert math.isnan(hypotheses.h4_rho)  # layer 0 has no fit: the paper's H4 is NaN, as published
        e3 = result.e3[measure]
        for name, expected in reference["e3"][measure].items():
            if isinstance(expected, list):
                for index, value in enumerate(expected):
                    assert_same(getattr(e3, name)[index], value, f"E3 {measure} {name}[{index}]")
            else:
                assert_same(getattr(e3, name), expected, f"E3 {measure} {name}")
    for name, expected in reference["e4"].items():
        if isinstance(expected, list):
            for index, value in enumerate(expected):
                assert_same(getattr(result.e4, name)[index], value, f"E4 {name}[{index}]")
        else:
            assert_same(getattr(result.e4, name), expected, f"E4 {name}")
    for name, expected in reference["checks"].items():
        assert_same(getattr(result.checks, name), expected, f"check {name}")
    assert result.checks.ols_theil_sen_layers == [1, 2, 3, 4, 5, 6]


def test_paper_mode_equals_the_reference_in_every_noise_model(planted_pair):
    x, result, reference = planted_pair
    for measure in ("eucl", "residual", "proj"):
        for layer in range(x.shape[2]):
            rows = result.noise_models[(result.noise_models["measure"] == measure) & (result.noise_models["layer"] == layer)]
            expected = reference["noise"][measure][layer]
            if not expected:
                assert rows["aicc"].isna().all()
                continue
            for row in rows.to_dict(orient="records"):
                for name, value in expected[row["model"]].items():
                    assert_same(row[name], value, f"{measure} layer {layer} {row['model']} {name}")


def test_h4_over_all_layers_equals_the_reference_when_every_layer_has_a_fit():
    x = planted(7, context_free_embeddings=False)
    result = magdash_paper(x, n_boot=0)
    reference = reference_analysis(x, bootstrap=False)  # H4 is a rank test of the alphas: no interval
    for measure in ("eucl", "residual", "proj"):
        expected = reference["hypotheses"][measure]
        assert math.isfinite(expected["h4_rho"])
        assert_same(result.hypotheses[measure].h4_rho, expected["h4_rho"], f"{measure} H4 rho")
        assert_same(result.hypotheses[measure].h4_p, expected["h4_p"], f"{measure} H4 p")
        assert result.hypotheses[measure].h4 == expected["h4"]


def test_magdash_mode_differs_exactly_where_the_conventions_say(planted_pair):
    x, paper, _ = planted_pair
    layers = ((f"layer {i}", x[:, :, i]) for i in range(x.shape[2]))
    own = run_analysis(layers, MAGNITUDES, n_blocks=N_BLOCKS, params=AnalysisParams(n_boot=N_BOOT), n_layers=x.shape[2])
    # same measures, OLS and Theil-Sen fits and outlier rule
    for column in ("alpha", "intercept", "r2", "p", "se", "alpha_theil_sen", "n_points", "n_outliers"):
        np.testing.assert_allclose(own.fits[column], paper.fits[column], rtol=1e-13, equal_nan=True)
    # other bootstrap draws: other intervals
    assert own.fit("eucl", 4).ci_low != paper.fit("eucl", 4).ci_low
    # H4 over the fitted core layers, so it has a value where the paper's is NaN
    assert own.hypotheses["eucl"].h4_layers == CORE and math.isfinite(own.hypotheses["eucl"].h4_rho)
    # E3: magdash keeps the outlier rule in the refit, so the outlying layer differs
    assert own.e3["eucl"].alpha_without[1] != pytest.approx(paper.e3["eucl"].alpha_without[1], abs=1e-6)
    assert own.e3["eucl"].alpha_without[0] == pytest.approx(paper.e3["eucl"].alpha_without[0], abs=1e-12)
    # noise models: magdash scores only the points the outlier rule keeps
    def points(result, layer):
        rows = result.noise_models
        return int(rows[(rows["measure"] == "eucl") & (rows["layer"] == layer)]["n_points"].iloc[0])

    assert points(own, OUTLIER_LAYER) == 25 and points(paper, OUTLIER_LAYER) == 26
    assert own.checks.ols_theil_sen_layers == CORE


def test_the_paper_bootstrap_stream_is_the_papers_loop_for_10000_resamples():
    for n_points in (5, 26):
        rng = np.random.RandomState(42)
        loop = np.zeros((10_000, n_points))
        for row in range(10_000):
            for index in rng.randint(0, n_points, n_points):
                loop[row, index] += 1
        vectorised = np.concatenate(list(resample_counts(n_points, 10_000, 42, stream="legacy")))
        np.testing.assert_array_equal(vectorised, loop)
        assert not np.array_equal(np.concatenate(list(resample_counts(n_points, 10_000, 42))), loop)


def test_e5_paper_summary_equals_the_reference():
    x = planted(11)
    values = reference_measures(x)["eucl"].T
    counts = {int(n): int(1e6 / n**1.3) for n in PAPER_MAGNITUDES}
    counts[70] = 10  # break the monotone link so that one layer's rho can be small
    table = e5_correlation(MAGNITUDES, {layer: values[layer] for layer in CORE}, counts, n_boot=0)
    summary = e5_summary(table, conventions="paper")
    log_frequency = np.log(np.array([counts[int(n)] for n in MAGNITUDES], dtype=float) + 1)
    rhos = []
    for layer in CORE:
        rho, p = stats.spearmanr(log_frequency, values[layer])
        rhos.append({"layer": layer, "rho": rho, "p": p})
    raw = summary["raw"]  # the paper's E5 is the raw correlation
    assert_same(raw["mean_rho"], np.mean([r["rho"] for r in rhos]), "mean rho")
    assert_same(raw["median_rho"], np.median([r["rho"] for r in rhos]), "median rho")
    assert raw["significant_layers"] == sum(1 for r in rhos if r["rho"] > 0 and r["p"] < 0.05)
    best = max(rhos, key=lambda r: abs(r["rho"]))
    assert raw["best_layer"] == best["layer"]
    assert_same(raw["best_rho"], best["rho"], "best rho")
    assert_same(raw["best_p"], best["p"], "best p")


def test_e5_counts_only_positive_correlations_in_paper_mode():
    table = e5_correlation(MAGNITUDES, {3: -MAGNITUDES, 4: MAGNITUDES}, {int(n): int(n) for n in MAGNITUDES}, n_boot=0)
    assert list(table["raw_rho"]) == pytest.approx([-1.0, 1.0])
    assert e5_summary(table)["raw"]["significant_layers"] == 2
    assert e5_summary(table, conventions="paper")["raw"]["significant_layers"] == 1


def test_e6_paper_comparison_equals_the_reference():
    a, b = reference_measures(planted(3))["eucl"], reference_measures(planted(4))["eucl"]
    comparison = compare_models(
        MAGNITUDES, a.T, b.T, n_blocks_a=N_BLOCKS, n_blocks_b=N_BLOCKS, measure="eucl",
        rules=FitRules(drop_outliers=get_conventions("paper").e6_outlier_rule, n_boot=0),
    )
    alphas_a = [stats.linregress(np.log(MAGNITUDES), np.log(a[:, layer] + 1e-30)).slope for layer in CORE]
    alphas_b = [stats.linregress(np.log(MAGNITUDES), np.log(b[:, layer] + 1e-30)).slope for layer in CORE]
    core = comparison.layers.set_index("layer_a").loc[CORE]
    for index, layer in enumerate(CORE):
        assert_same(core.loc[layer, "alpha_a"], alphas_a[index], f"alpha A {layer}")
        assert_same(core.loc[layer, "alpha_b"], alphas_b[index], f"alpha B {layer}")
    wilcoxon = stats.wilcoxon(alphas_a, alphas_b)
    assert_same(comparison.wilcoxon_p, wilcoxon.pvalue, "Wilcoxon p")
    assert_same(comparison.mean_delta, np.mean(np.subtract(alphas_a, alphas_b)), "mean difference")


# -- parameters, cache, CLI --------------------------------------------------------------


@pytest.mark.slow
def test_conventions_choose_their_seed_and_are_part_of_the_cache_key(store):
    assert AnalysisParams().seed == 0 and AnalysisParams(conventions="paper").seed == 42
    assert AnalysisParams(conventions="paper", seed=7).seed == 7
    assert AnalysisParams(conventions="paper") != AnalysisParams(seed=42)
    with pytest.raises(AnalysisError, match="unknown conventions 'papers'; choose from magdash, paper"):
        AnalysisParams(conventions="papers")
    with pytest.raises(AnalysisError, match="below 2\\*\\*32"):
        AnalysisParams(conventions="paper", seed=2**32)
    assert set(CONVENTIONS) == {"magdash", "paper"}
    x = planted(2).astype(np.float32)
    store.import_arrays("planted", x, PAPER_MAGNITUDES, carriers=list(PAPER_CARRIERS))
    own = analyze(store, "planted", params=AnalysisParams(n_boot=50))
    paper = analyze(store, "planted", params=AnalysisParams(n_boot=50, conventions="paper"))
    assert not paper.from_cache and paper.params.conventions == "paper"
    assert analysis_key(store, "planted", "paper", own.params) != analysis_key(store, "planted", "paper", paper.params)
    again = analyze(store, "planted", params=AnalysisParams(n_boot=50, conventions="paper"))
    assert again.from_cache and again.params == paper.params
    assert json.dumps(again.to_json()) == json.dumps(paper.to_json())


def test_cli_paper_conventions_json_matches_the_api(store, capsys):
    x = planted(2).astype(np.float32)
    store.import_arrays("planted", x, PAPER_MAGNITUDES, carriers=list(PAPER_CARRIERS))
    args = ["analyze", "--model", "planted", "--store", str(store.path), "--n-boot", "200"]
    assert main([*args, "--conventions", "paper", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    result = analyze(store, "planted", params=AnalysisParams(n_boot=200, conventions="paper"))
    assert result.from_cache
    assert document["conventions"] == "paper" and document["params"]["seed"] == 42
    assert document["layers"][4]["eucl"]["ci_low"] == pytest.approx(result.fit("eucl", 4).ci_low, abs=1e-12)
    assert document["hypotheses"]["eucl"]["h4_layers"] == list(range(7))
    assert main([*args, "--conventions", "paper"]) == 0
    text = capsys.readouterr().out
    assert "the conventions of the paper's script" in text and "seed 42" in text
    assert "over all layers 0-6" in text
    with pytest.raises(SystemExit):
        main([*args, "--conventions", "nature"])
    assert "invalid choice: 'nature'" in capsys.readouterr().err


@pytest.mark.slow
def test_compare_follows_the_conventions(store, capsys):
    for name, seed in (("a", 3), ("b", 4)):
        store.import_arrays(name, planted(seed).astype(np.float32), PAPER_MAGNITUDES, carriers=list(PAPER_CARRIERS))
    own = compare(store, "a", "b", params=AnalysisParams(n_boot=100))
    paper = compare(store, "a", "b", params=AnalysisParams(n_boot=100, conventions="paper"))
    assert own.conventions == "magdash" and paper.conventions == "paper"
    # model a has an outlier at layer 4: only the paper's comparison keeps it
    assert own.measures["eucl"].layers.loc[4, "alpha_a"] != pytest.approx(paper.measures["eucl"].layers.loc[4, "alpha_a"], abs=1e-6)
    assert own.measures["eucl"].layers.loc[3, "alpha_a"] == pytest.approx(paper.measures["eucl"].layers.loc[3, "alpha_a"], abs=1e-12)
    assert main(["compare", "--model", "a", "--model", "b", "--store", str(store.path), "--n-boot", "100",
                 "--conventions", "paper", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["conventions"] == "paper"


def test_paper_noise_scoring_by_hand():
    magnitudes = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    values = np.array([1.0, 2.0, 3.0, 4.0, 6.0])
    frame = compare_noise_models(magnitudes, values, scoring="paper").set_index("model")
    k = np.mean(values / magnitudes)
    rss = float(((values - k * magnitudes) ** 2).sum())
    assert frame.loc["scalar", "k"] == pytest.approx(k) and frame.loc["scalar", "n_params"] == 1
    # 5 points, k = 1: n log(SS/n) + 2k + 2k(k+1)/max(n-k-1, 1) = 5 log(SS/5) + 2 + 4/3
    assert frame.loc["scalar", "aicc"] == pytest.approx(5 * math.log(rss / 5 + 1e-30) + 2 + 4 / 3)
    assert frame.loc["constant", "aicc"] == pytest.approx(5 * math.log(values.var() + 1e-30) + 2 + 4 / 3)
    gaussian = compare_noise_models(magnitudes, values).set_index("model")
    assert gaussian.loc["scalar", "k"] == pytest.approx(values @ magnitudes / (magnitudes @ magnitudes))
    assert list(gaussian["n_params"]) == [2, 2, 3, 3] and list(frame["n_params"]) == [1, 1, 2, 2]
    with pytest.raises(AnalysisError, match="unknown noise-model scoring"):
        compare_noise_models(magnitudes, values, scoring="bic")


def test_an_outlier_can_flip_the_best_noise_model_between_conventions():
    magnitudes = MAGNITUDES
    values = 0.5 + 0.001 * np.sin(np.arange(26))  # flat: the constant model is best
    values[-1] = 40.0  # one large outlier at n = 1000 looks scalar
    from magdash.variability.fits import scaling_mask

    keep, dropped = scaling_mask(magnitudes, values, rules=FitRules(drop_outliers=True))
    assert dropped == 1
    own = compare_noise_models(magnitudes, values, mask=keep).set_index("model")
    paper = compare_noise_models(magnitudes, values, scoring="paper").set_index("model")
    assert own["delta_aicc"].idxmin() == "constant"
    assert paper["delta_aicc"].idxmin() != "constant"


def test_depth_trend_over_all_layers_is_nan_when_a_layer_has_no_fit():
    assert all(math.isnan(v) for v in depth_trend_all_layers(np.array([np.nan, 0.1, 0.2, 0.3])))
    rho, p = depth_trend_all_layers(np.array([0.0, 0.1, 0.2, 0.4]))
    # scipy's asymptotic p of a perfect ordering is 0, which no test of 4 points can give: 2/4! is.
    assert rho == pytest.approx(1.0) and stats.spearmanr(range(4), [0, 0.1, 0.2, 0.4]).pvalue == 0
    assert p == pytest.approx(2 / 24)
    rho, p = depth_trend_all_layers(np.array([0.0, 0.2, 0.1, 0.4, 0.3, 0.5, 0.7, 0.6, 0.9, 0.8]))
    assert p == pytest.approx(stats.spearmanr(range(10), [0.0, 0.2, 0.1, 0.4, 0.3, 0.5, 0.7, 0.6, 0.9, 0.8]).pvalue)
