"""Charts (magdash.presentation.charts) tested on their Vega-Lite specs and rendered scenegraphs, and the
tidy-table builders behind them (magdash.presentation.tables) on planted and hand-computed cases.

The scenegraph comes from vl-convert's Vega engine, offline: it shows what is actually drawn,
so "a missing alpha is never drawn as a number" is checked on the rendered marks.
"""

from __future__ import annotations

import json
import math

import altair as alt
import numpy as np
import pandas as pd
import pytest
import vl_convert as vlc

from magdash.depth_statistics.omega import OMEGA_HISTOGRAM_EDGES, summarize_omega
from magdash.depth_statistics.spectrum import fit_spectrum, gram_eigenvalues
from magdash.errors import AnalysisError
from magdash.formatting import layer_span
from magdash.presentation import chart_style as style
from magdash.presentation import compare_figures, depth_figures, scaling_figures, tokenization_figures, weber_figures
from magdash.presentation import frequency_figures as ff
from magdash.presentation import geometry_figures as gf
from magdash.tokenization import NumberTokens
from magdash.variability.analysis import run_analysis
from magdash.variability.analysis_params import AnalysisParams
from magdash.variability.fits import ScalingFit
from magdash.variability.geometry import centroid_rdm, pc1_coordinates
from magdash.variability.measures import MEASURES, v_eucl, v_residual

MAGNITUDES = np.array(
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 200, 300, 500, 700, 1000],
    dtype=np.float64,
)
N_BLOCKS = 4


# -- helpers -------------------------------------------------------------------------------


def units(spec: dict, inherited: dict | None = None) -> list[dict]:
    """Every unit (single-mark) spec inside a layered / concatenated spec, in drawing order,
    with the data it inherits from its parents filled in."""
    data = spec.get("data", inherited)
    found = []
    if "mark" in spec:
        found.append({**spec, "data": data} if data is not None else spec)
    for key in ("layer", "vconcat", "hconcat", "concat"):
        for child in spec.get(key, []):
            found.extend(units(child, data))
    return found


def mark_type(unit: dict) -> str:
    mark = unit["mark"]
    return mark if isinstance(mark, str) else mark["type"]


def mark_option(unit: dict, option: str):
    mark = unit["mark"]
    return None if isinstance(mark, str) else mark.get(option)


def rows(spec: dict, unit: dict) -> list[dict]:
    data = unit.get("data", {})
    if "values" in data:
        return data["values"]
    return spec["datasets"][data["name"]]


def of_type(spec: dict, kind: str) -> list[dict]:
    return [u for u in units(spec) if mark_type(u) == kind]


def rendered_marks(chart) -> list[dict]:
    """Mark groups of the rendered scenegraph (role "mark"), in order."""
    scenegraph = vlc.vegalite_to_scenegraph(chart.to_dict(), allowed_base_urls=[])
    found = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("role") == "mark":
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(scenegraph)
    return found


def title_text(spec: dict) -> tuple[str, list[str]]:
    title = spec["title"]
    subtitle = title.get("subtitle", [])
    return title["text"], [subtitle] if isinstance(subtitle, str) else list(subtitle)


@pytest.fixture(scope="module")
def result():
    """A small analysis with a planted slope per layer and a context-free embedding layer."""
    rng = np.random.default_rng(7)
    layers = []
    for layer in range(N_BLOCKS + 2):
        if layer == 0:
            base = rng.normal(size=(MAGNITUDES.size, 1, 12))
            vectors = np.repeat(base, 5, axis=1)  # identical carriers: V = 0, no fit
        else:
            scale = MAGNITUDES[:, None, None] ** (0.2 * layer - 0.4)
            vectors = rng.normal(size=(MAGNITUDES.size, 1, 12)) * 4 + rng.normal(size=(MAGNITUDES.size, 5, 12)) * scale
        layers.append((f"L{layer}", vectors.astype(np.float32)))
    params = AnalysisParams(n_boot=50, bootstrap_layers="all")
    return run_analysis(iter(layers), MAGNITUDES, n_blocks=N_BLOCKS, params=params, model="m", stimuli="s")


# -- inline data ---------------------------------------------------------------------------


def test_inline_data_writes_missing_and_infinite_numbers_as_null():
    frame = pd.DataFrame({"a": [1.0, np.nan, np.inf], "b": ["x", None, "z"], "c": [1, 2, 3]})
    values = style.inline_data(frame)["values"]
    assert values == [
        {"a": 1.0, "b": "x", "c": 1},
        {"a": None, "b": None, "c": 2},
        {"a": None, "b": "z", "c": 3},
    ]


def test_missing_columns_are_a_readable_error():
    with pytest.raises(AnalysisError, match="alpha_profile needs columns .*ci_low"):
        scaling_figures.alpha_profile(pd.DataFrame({"measure": ["eucl"], "layer": [1], "alpha": [0.1]}))


def test_inline_data_is_not_limited_to_5000_rows():
    frame = pd.DataFrame({"layer": np.repeat(np.arange(60), 100), "magnitude": np.tile(np.arange(1, 101), 60)})
    frame["cv"] = 0.5
    spec = weber_figures.cv_chart(frame).to_dict()  # Altair's default transformer would refuse this
    assert len(rows(spec, of_type(spec, "line")[0])) == 6000


# -- scaling -------------------------------------------------------------------------------


def test_scaling_scatter_layers_encodings_and_hidden_points(result):
    points = scaling_figures.scaling_points(result, "eucl", 3)
    points.loc[0, "V"] = 0.0  # cannot sit on a log axis
    points.loc[0, "status"] = scaling_figures.POINT_STATUS[2]
    lines = scaling_figures.scaling_lines(points, result.fit("eucl", 3))
    carriers = scaling_figures.carrier_distances(np.ones((26, 5, 2)), MAGNITUDES, [f"carrier <{i}>" for i in range(5)])
    carriers["distance"] = np.arange(len(carriers), dtype=float) + 1.0
    spec = scaling_figures.scaling_scatter(points, lines, carriers=carriers).to_dict()
    assert [mark_type(u) for u in units(spec)] == ["circle", "line", "point"]
    circle, line, point = units(spec)
    for unit in units(spec):
        assert unit["encoding"]["x"]["field"] == "magnitude"
        assert unit["encoding"]["x"]["scale"]["type"] == "log"
        assert unit["encoding"]["y"]["scale"]["type"] == "log"
    assert {t["field"] for t in circle["encoding"]["tooltip"]} == {"magnitude", "carrier", "distance"}
    assert len(rows(spec, circle)) == 130
    assert line["encoding"]["color"]["scale"]["domain"] == [
        f"OLS fit (alpha = {result.fit('eucl', 3).alpha:.3f})",
        "alpha = 1 (scalar)",
        "alpha = 0 (constant)",
    ]
    assert line["mark"]["clip"] is True
    drawn = rows(spec, point)
    assert len(drawn) == 25 and all(r["V"] > 0 for r in drawn)
    assert point["encoding"]["shape"]["scale"]["domain"] == list(scaling_figures.POINT_STATUS[:2])
    text, subtitle = title_text(spec)
    assert "L3" in text and "V_eucl" in text
    assert subtitle == [
        MEASURES["eucl"].explained, "1 magnitude(s) with V <= 0 or no value not drawn (no logarithm)"
    ]
    # The unit lives in the subtitle; the axis keeps a short title (Streamlit fits it in the height).
    assert point["encoding"]["y"]["title"] == "V_eucl (log scale)"
    # The y domain follows the points and carriers, not the alpha = 1 reference line.
    low, high = point["encoding"]["y"]["scale"]["domain"]
    observed = np.concatenate([[r["V"] for r in drawn], carriers["distance"]])
    assert low == pytest.approx(observed.min() / 1.5) and high == pytest.approx(observed.max() * 1.5)


def test_scaling_scatter_marks_outliers_and_renders_one_symbol_per_point():
    points = pd.DataFrame(
        {
            "magnitude": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            "V": [1.0, 1.1, 0.9, 1.0, 9.0, np.nan],
            "status": ["fitted"] * 4 + ["outlier (> 3x median)", "no value"],
            "measure": "residual",
            "label": "block 2",
        }
    )
    lines = scaling_figures.scaling_lines(points, {"alpha": 0.0, "intercept": 0.0})
    chart = scaling_figures.scaling_scatter(points, lines)
    spec = chart.to_dict()
    point = of_type(spec, "point")[0]
    colour = point["encoding"]["color"]
    assert colour["condition"]["value"] == style.OUTLIER_COLOR
    assert colour["value"] == style.MEASURE_COLORS["V_residual"]
    symbols = [m for m in rendered_marks(chart) if m["marktype"] == "symbol"]
    assert len(symbols[-1]["items"]) == 5  # the NaN row is not drawn


def test_scaling_lines_pass_through_the_geometric_centre_with_their_slopes():
    magnitudes = np.array([1.0, 10.0, 100.0, 1000.0, 5.0, 50.0])
    values = 2.0 * magnitudes**-0.1
    points = pd.DataFrame({"magnitude": magnitudes, "V": values, "status": "fitted"})
    fit = ScalingFit(-0.1, math.log(2.0), 1.0, 0.0, 0.0, -0.1, math.nan, math.nan, 6)
    lines = scaling_figures.scaling_lines(points, fit)
    centre_n = np.exp(np.log(magnitudes).mean())
    centre_v = np.exp(np.log(values).mean())
    assert len(lines) == 6
    for _, group in lines.groupby("line"):
        log_n = np.log(group["magnitude"].to_numpy())
        log_v = np.log(group["V"].to_numpy())
        slope = (log_v[1] - log_v[0]) / (log_n[1] - log_n[0])
        assert slope == pytest.approx(group["alpha"].iloc[0])
        assert np.interp(np.log(centre_n), log_n, log_v) == pytest.approx(np.log(centre_v))
        assert group["magnitude"].min() == 1.0 and group["magnitude"].max() == 1000.0
    assert set(lines["alpha"]) == {-0.1, 1.0, 0.0}
    assert scaling_figures.scaling_lines(points, ScalingFit.missing(3)).empty


def test_scaling_points_status_follows_the_fit_rules(result):
    result_values = result.values["eucl"].copy()
    try:
        planted = np.full(MAGNITUDES.size, 1.0)
        planted[[1, 2]] = [0.0, np.nan]
        planted[5] = 10.0  # > 3 x median
        result.values["eucl"][2] = planted
        points = scaling_figures.scaling_points(result, "eucl", 2)
        status = points["status"].tolist()
        assert status[1] == "V <= 0" and status[2] == "no value"
        assert status[5] == "outlier (> 3x median)"
        assert status.count("fitted") == MAGNITUDES.size - 3
        result.values["proj"][2] = planted  # proj is fitted without the outlier rule
        assert scaling_figures.scaling_points(result, "proj", 2)["status"][5] == "fitted"
    finally:
        result.values["eucl"][:] = result_values
    with pytest.raises(AnalysisError, match="layer 99"):
        scaling_figures.scaling_points(result, "eucl", 99)


def test_carrier_distances_average_to_v_eucl_and_v_residual(rng):
    vectors = rng.normal(size=(7, 4, 9)).astype(np.float32) + rng.normal(size=(1, 4, 9)).astype(np.float32) * 5
    magnitudes, carriers = np.arange(1.0, 8.0), ["a", "b", "c", "d"]
    for measure, reference in (("eucl", v_eucl), ("residual", v_residual)):
        frame = scaling_figures.carrier_distances(vectors, magnitudes, carriers, measure)
        assert len(frame) == 28 and frame["carrier"].tolist()[:4] == ["a", "b", "c", "d"]
        means = frame.groupby("magnitude")["distance"].mean().to_numpy()
        np.testing.assert_allclose(means, reference(vectors), rtol=1e-10)
    identical = np.repeat(vectors[:, :1], 4, axis=1)
    assert (scaling_figures.carrier_distances(identical, magnitudes, carriers)["distance"] == 0).all()
    with pytest.raises(AnalysisError, match="eucl, residual, not 'proj'"):
        scaling_figures.carrier_distances(vectors, magnitudes, carriers, "proj")


# -- profiles ------------------------------------------------------------------------------


def test_alpha_profile_structure_and_colours(result):
    spec = scaling_figures.alpha_profile(result.fits, window=(0.8, 1.2)).to_dict()
    kinds = [mark_type(u) for u in units(spec)]
    assert kinds == ["rect", "rect", "text", "rect", "rule", "area", "line", "point"]
    core_rect = units(spec)[0]
    assert sorted(r["layer"] for r in rows(spec, core_rect)) == result.core_layers
    assert all(r["layer_high"] - r["layer_low"] == pytest.approx(1.0) for r in rows(spec, core_rect))
    no_fit = units(spec)[1]
    assert [r["layer"] for r in rows(spec, no_fit)] == [0.0]  # the embedding layer
    assert rows(spec, units(spec)[2])[0]["text"] == "no fit"
    window = units(spec)[3]
    assert (window["encoding"]["y"]["datum"], window["encoding"]["y2"]["datum"]) == (0.8, 1.2)
    assert units(spec)[4]["encoding"]["y"]["datum"] == 0.0
    area, line, point = units(spec)[5:]
    assert (area["encoding"]["y"]["field"], area["encoding"]["y2"]["field"]) == ("ci_low", "ci_high")
    assert mark_option(area, "invalid") == mark_option(line, "invalid") == "break-paths-filter-domains"
    assert mark_option(point, "invalid") == "filter"
    colour = point["encoding"]["color"]
    assert colour["scale"]["domain"] == ["V_eucl", "V_residual", "V_proj"]
    assert colour["scale"]["range"] == [style.MEASURE_COLORS[m] for m in colour["scale"]["domain"]]
    assert point["encoding"]["x"]["axis"]["format"] == "d"
    assert point["encoding"]["x"]["scale"]["domain"] == [-0.5, result.n_layers - 0.5]
    assert {t["field"] for t in point["encoding"]["tooltip"]} >= {"alpha", "ci_low", "ci_high", "label", "r2"}


def test_alpha_profile_never_draws_a_missing_alpha(result):
    fits = result.fits[result.fits["measure"] == "eucl"].copy()
    fits.loc[fits["layer"] == 3, ["alpha", "ci_low", "ci_high"]] = np.nan  # a gap mid-profile
    chart = scaling_figures.alpha_profile(fits, measures=["eucl"])
    spec = chart.to_dict()
    line = of_type(spec, "line")[0]
    by_layer = {r["layer"]: r for r in rows(spec, line)}
    assert by_layer[0]["alpha"] is None and by_layer[3]["alpha"] is None
    marks = rendered_marks(chart)
    symbols = [m for m in marks if m["marktype"] == "symbol"][-1]["items"]
    finite = np.isfinite(fits["alpha"]).sum()
    assert len(symbols) == finite == result.n_layers - 2
    path = [m for m in marks if m["marktype"] == "line"][-1]["items"]
    undefined = [item for item in path if not item["defined"]]
    assert len(undefined) == 2 and all("y" not in item for item in undefined)
    no_fit_rows = rows(spec, of_type(spec, "rect")[1])
    assert [r["layer"] for r in no_fit_rows] == [0.0, 3.0]


def test_alpha_profile_by_gamma_uses_depth_fractions(result):
    spec = scaling_figures.alpha_profile(scaling_figures.fits_frame(result), x="gamma", measures=["proj", "eucl"]).to_dict()
    point = of_type(spec, "point")[0]
    assert point["encoding"]["x"]["field"] == "gamma"
    assert point["encoding"]["x"]["title"] == style.GAMMA_TITLE
    assert point["encoding"]["color"]["scale"]["domain"] == ["V_proj", "V_eucl"]
    core_rect = of_type(spec, "rect")[0]
    widths = [r["gamma_high"] - r["gamma_low"] for r in rows(spec, core_rect)]
    assert widths == pytest.approx([1 / N_BLOCKS] * len(result.core_layers))
    with pytest.raises(AnalysisError, match="x must be"):
        scaling_figures.alpha_profile(result.fits, x="depth")


def test_weber_window_shows_the_window_and_both_references(result):
    fits = scaling_figures.models_fits_frame({"model A": result, "model <B>": result})
    spec = weber_figures.weber_window(fits, (0.7, 1.3), measure="residual").to_dict()
    rect = of_type(spec, "rect")[0]
    assert (rect["encoding"]["y"]["datum"], rect["encoding"]["y2"]["datum"]) == (0.7, 1.3)
    assert sorted(r["encoding"]["y"]["datum"] for r in of_type(spec, "rule")) == [0.0, 1.0]
    point = of_type(spec, "point")[0]
    assert point["encoding"]["color"]["scale"]["domain"] == ["model A", "model <B>"]
    assert len(rows(spec, point)) == 2 * result.n_layers
    assert point["encoding"]["y"]["title"] == "alpha of V_residual"
    assert "[0.7, 1.3]" in title_text(spec)[0]


def test_cv_chart_by_layer_on_a_log_axis(result):
    cv = weber_figures.cv_frame(result, layers=[1, 2])
    assert set(cv.columns) >= {"layer", "label", "gamma", "core", "magnitude", "cv"}
    cv.loc[3, "cv"] = np.nan
    chart = weber_figures.cv_chart(cv)
    spec = chart.to_dict()
    line, point = units(spec)
    assert line["encoding"]["x"]["scale"]["type"] == "log"
    # Integer layers: an ordinal legend (a continuous one reads 3.0, 3.5, 4.0, ...).
    assert line["encoding"]["color"]["field"] == "layer" and line["encoding"]["color"]["type"] == "ordinal"
    assert line["encoding"]["detail"]["field"] == "layer"
    symbols = [m for m in rendered_marks(chart) if m["marktype"] == "symbol"][-1]["items"]
    assert len(symbols) == 2 * MAGNITUDES.size - 1


def test_e4_and_e3_charts(result):
    e4 = weber_figures.e4_frame(result)
    assert len(e4) == 2 * len(result.core_layers)
    spec = weber_figures.e4_chart(e4, subtitle="ratio 4.35").to_dict()
    point = of_type(spec, "point")[0]
    assert point["encoding"]["color"]["scale"]["domain"] == ["on-axis", "off-axis"]
    assert point["encoding"]["color"]["scale"]["range"] == [weber_figures.AXIS_COLORS["on-axis"], weber_figures.AXIS_COLORS["off-axis"]]
    assert title_text(spec)[1] == ["ratio 4.35"]
    e3 = weber_figures.e3_frame(result)
    assert set(e3["fit"]) == set(weber_figures.E3_FITS)
    spec = weber_figures.e3_chart(e3).to_dict()
    line = of_type(spec, "line")[0]
    assert line["encoding"]["strokeDash"]["scale"]["domain"] == list(weber_figures.E3_FITS)
    assert line["encoding"]["detail"]["field"] == "series"
    assert line["encoding"]["color"]["scale"]["domain"] == ["V_eucl", "V_residual", "V_proj"]


def test_noise_model_chart_heatmap_winner_and_unscored_layers(result):
    noise = weber_figures.noise_frame(result)
    chart = weber_figures.noise_model_chart(noise, measure="eucl")
    spec = chart.to_dict()
    unscored, heat = of_type(spec, "rect")
    assert {r["layer"] for r in rows(spec, unscored)} == {0}  # the embedding layer has no score
    assert rows(spec, unscored)[0]["reason"] == style.NO_FIT_TEXT
    assert heat["encoding"]["color"]["field"] == "weight"
    assert heat["encoding"]["color"]["scale"]["domain"] == [0, 1]
    assert heat["encoding"]["y"]["sort"] == list(weber_figures.NOISE_MODEL_LABELS.values())
    winners = rows(spec, of_type(spec, "point")[0])
    assert len(winners) == result.n_layers - 1  # one winner per scored layer
    assert all(r["delta_aicc"] == 0 for r in winners)


# -- comparison ----------------------------------------------------------------------------


def _comparison_frame(n_layers: int = 5) -> pd.DataFrame:
    layers = np.arange(n_layers)
    alpha_a = np.array([np.nan, -0.05, -0.04, -0.03, -0.02])[:n_layers]
    alpha_b = np.array([np.nan, -0.02, -0.01, 0.0, 0.01])[:n_layers]
    delta = alpha_a - alpha_b
    return pd.DataFrame(
        {
            "model_a": "instruct",
            "model_b": "base",
            "measure": "eucl",
            "layer_a": layers,
            "layer_b": layers,
            "gamma_a": layers / (n_layers - 1),
            "gamma_b": layers / (n_layers - 1),
            "core": layers >= 2,
            "alpha_a": alpha_a,
            "alpha_b": alpha_b,
            "delta": delta,
            "ci_low": np.where(layers >= 2, delta - 0.01, np.nan),
            "ci_high": np.where(layers >= 2, delta + 0.01, np.nan),
        }
    )


@pytest.mark.slow
def test_compare_profiles_two_panels_with_delta_band():
    chart = compare_figures.compare_profiles(_comparison_frame(), subtitle="Wilcoxon p = 0.03")
    spec = chart.to_dict()
    assert len(spec["vconcat"]) == 2
    top, bottom = spec["vconcat"]
    top_point = of_type(top, "point")[0]
    assert top_point["encoding"]["color"]["scale"]["domain"] == ["instruct", "base"]
    assert top_point["encoding"]["color"]["scale"]["range"] == list(style.MODEL_COLORS[:2])
    top_rows = rows(spec, top_point)
    assert len(top_rows) == 10 and {r["model"] for r in top_rows} == {"instruct", "base"}
    area = of_type(bottom, "area")[0]
    assert (area["encoding"]["y"]["field"], area["encoding"]["y2"]["field"]) == ("ci_low", "ci_high")
    assert of_type(bottom, "line")[0]["encoding"]["y"]["title"] == "delta alpha"
    assert "instruct minus base" in bottom["title"]["text"]
    assert [r["layer_a"] for r in rows(spec, of_type(bottom, "rect")[0])] == [2, 3, 4]  # core band
    assert [r["layer_a"] for r in rows(spec, of_type(bottom, "rect")[1])] == [0]  # no fit
    assert title_text(spec) == ("instruct vs base: V_eucl", ["Wilcoxon p = 0.03"])
    gamma = compare_figures.compare_profiles(_comparison_frame(), x="gamma").to_dict()
    assert of_type(gamma["vconcat"][1], "line")[0]["encoding"]["x"]["field"] == "gamma_a"
    with pytest.raises(AnalysisError, match="x must be"):
        compare_figures.compare_profiles(_comparison_frame(), x="depth")
    # stacked panels cannot share a container width: each gets the fixed default instead
    stacked = compare_figures.compare_profiles(_comparison_frame(), width="container").to_dict()
    assert [panel["width"] for panel in stacked["vconcat"]] == [style.DEFAULT_WIDTH] * 2


# -- geometry ------------------------------------------------------------------------------


def test_rdm_heatmap_cells_and_ordinal_axes(rng):
    magnitudes = np.array([1.0, 2.0, 10.0, 100.0])
    rdm = centroid_rdm(rng.normal(size=(4, 6)))
    rdm[0, 3] = np.nan
    frame = gf.rdm_frame(rdm, magnitudes)
    assert len(frame) == 16
    assert frame.loc[(frame["a"] == 2.0) & (frame["b"] == 10.0), "dissimilarity"].item() == rdm[1, 2]
    spec = gf.rdm_heatmap(frame, metric="cosine").to_dict()
    rect = of_type(spec, "rect")[0]
    assert rect["encoding"]["x"]["type"] == "ordinal" and rect["encoding"]["y"]["type"] == "ordinal"
    assert len(rows(spec, rect)) == 15
    assert rect["encoding"]["color"]["title"] == "cosine distance"
    with pytest.raises(AnalysisError, match="does not match"):
        gf.rdm_frame(rdm, magnitudes[:3])


def test_rsa_by_layer_filters_the_metric(result):
    frame = gf.rsa_frame(result)
    assert len(frame) == 4 * result.n_layers
    spec = gf.rsa_by_layer(frame, metric="cosine").to_dict()
    point = of_type(spec, "point")[0]
    assert point["encoding"]["color"]["scale"]["domain"] == ["log-ratio", "linear"]
    assert len(rows(spec, point)) == 2 * result.n_layers
    log_rows = [r for r in rows(spec, point) if r["model_rdm"] == "log-ratio"]
    expected = result.geometry["rsa_log_cosine"].to_numpy()
    np.testing.assert_allclose([np.nan if r["rho"] is None else r["rho"] for r in log_rows], expected)


def test_rsa_draws_the_random_control_dashed_and_says_what_it_shares(result):
    """The control's lines are dashed beside the model's; the sentence gives the log-ratio advantage
    over the core layers for both, computed here by hand from the geometry table."""
    import dataclasses

    control = dataclasses.replace(result, model="m@random")
    control.geometry = result.geometry.assign(rsa_log_euclidean=result.geometry["rsa_linear_euclidean"])
    spec = gf.rsa_figure(result, "euclidean", control).to_dict()
    line = of_type(spec, "line")[0]
    assert line["encoding"]["strokeDash"]["field"] == "weights"
    assert line["encoding"]["strokeDash"]["scale"]["domain"] == [gf.TRAINED_WEIGHTS, gf.CONTROL_WEIGHTS]
    assert line["encoding"]["detail"]["field"] == "curve"
    assert len(rows(spec, of_type(spec, "point")[0])) == 2 * 2 * result.n_layers
    core = result.geometry[result.geometry["layer"].isin(result.core_layers)]
    advantage = (core["rsa_log_euclidean"] - core["rsa_linear_euclidean"]).mean()
    sentence = gf.rsa_sentence(result, "euclidean", control)
    assert f"{advantage:+.3f} (m)" in sentence and "+0.000 (m@random)" in sentence
    assert "not learned" in sentence
    alone = gf.rsa_sentence(result, "euclidean")
    assert "no @random control is stored" in alone
    assert "strokeDash" not in of_type(gf.rsa_figure(result, "euclidean").to_dict(), "line")[0]["encoding"]


def test_pc1_vs_logn(rng):
    magnitudes = MAGNITUDES[:8]
    centroid_matrix = np.log(magnitudes)[:, None] * rng.normal(size=(1, 5)) + 0.01 * rng.normal(size=(8, 5))
    frame = gf.pc1_frame(pc1_coordinates(centroid_matrix, magnitudes), magnitudes)
    assert frame["pc1"].is_monotonic_increasing
    spec = gf.pc1_vs_logn(frame, subtitle="r = 0.99").to_dict()
    assert [mark_type(u) for u in units(spec)] == ["line", "point"]
    assert units(spec)[1]["encoding"]["x"]["scale"]["type"] == "log"


# -- frequency -----------------------------------------------------------------------------


def test_frequency_charts():
    counts = pd.DataFrame({"number": [1, 2, 3, 4], "count": [100, 0, 30, 20]})
    curves = pd.DataFrame({"number": [1, 4], "predicted": [100.0, 15.0], "model": "power law"})
    spec = ff.frequency_loglog(counts, curves).to_dict()
    circle, line = units(spec)
    assert [r["number"] for r in rows(spec, circle)] == [1, 3, 4]
    assert circle["encoding"]["y"]["scale"]["type"] == "log"
    assert line["encoding"]["color"]["scale"]["domain"] == ["power law"]
    assert title_text(spec)[1] == ["1 number(s) with count 0 not drawn (log axis)"]
    frame = pd.DataFrame({"magnitude": [1.0, 2.0, 3.0], "count": [0, 9, 99], "V": [1.0, np.nan, 3.0]})
    spec = ff.variability_vs_frequency(frame).to_dict()
    point = of_type(spec, "point")[0]
    assert point["encoding"]["x"]["field"] == "count_plus_one"
    assert [r["count_plus_one"] for r in rows(spec, point)] == [1.0, 100.0]
    rho = pd.DataFrame({"layer": [0, 1, 2, 3], "rho": [np.nan, 0.8, 0.85, 0.9], "core": [False, False, True, True]})
    spec = ff.frequency_rho_by_layer(rho).to_dict()
    assert [r["layer"] for r in rows(spec, of_type(spec, "rect")[0])] == [2, 3]
    assert [r["layer"] for r in rows(spec, of_type(spec, "rect")[1])] == [0]


# -- depth diagnostics -----------------------------------------------------------------------


def test_order_parameter_chart_baseline_gamma_c_and_control():
    gamma = np.linspace(0, 1, 5)
    frame = pd.concat(
        [
            pd.DataFrame({"gamma": gamma, "m": 0.2 + 0.1 * gamma, "ci_low": 0.19, "ci_high": 0.31, "series": "trained"}),
            pd.DataFrame({"gamma": gamma, "m": 0.2, "ci_low": 0.19, "ci_high": 0.21, "series": "random control"}),
        ]
    )
    spec = depth_figures.order_parameter_chart(frame, gamma_c=0.4, gamma_c_interval=(0.3, 0.5)).to_dict()
    rect, gamma_rule, baseline = units(spec)[:3]
    assert (rect["encoding"]["x"]["datum"], rect["encoding"]["x2"]["datum"]) == (0.3, 0.5)
    assert gamma_rule["encoding"]["x"]["datum"] == 0.4
    assert baseline["encoding"]["y"]["datum"] == pytest.approx(1 - math.sqrt(2 / math.pi))
    point = of_type(spec, "point")[0]
    assert point["encoding"]["color"]["scale"]["domain"] == ["trained", "random control"]
    assert point["encoding"]["color"]["scale"]["range"] == [style.SERIES_COLORS["trained"], style.SERIES_COLORS["random control"]]
    plain = depth_figures.order_parameter_chart(frame, baseline=None, gamma_c=float("nan")).to_dict()
    assert of_type(plain, "rule") == []


def test_omega_histogram_frame_and_heatmap(rng):
    summaries = [summarize_omega(rng.uniform(0.1, 0.3, size=500)), summarize_omega(rng.uniform(0.5, 0.6, size=200))]
    frame = depth_figures.omega_histogram_frame(summaries, [0, 8], [0.0, 1.0])
    assert (frame["count"] > 0).all()
    assert frame.groupby("layer")["fraction"].sum().to_numpy() == pytest.approx([1.0, 1.0])
    assert frame.groupby("layer")["count"].sum().tolist() == [500, 200]
    assert set(frame["gamma"]) == {0.0, 1.0}
    merged = depth_figures.omega_histogram_frame(summaries, [0, 8], [0.0, 1.0], merge=5)
    assert merged.groupby("layer")["count"].sum().tolist() == [500, 200]
    assert (merged["omega_high"] - merged["omega_low"]).to_numpy() == pytest.approx(0.05)
    assert len(merged) < len(frame)
    spec = depth_figures.omega_heatmap(frame).to_dict()
    rect = of_type(spec, "rect")[0]
    assert rect["encoding"]["x"]["field"] == "omega_low" and rect["encoding"]["x2"]["field"] == "omega_high"
    assert rect["encoding"]["y"]["sort"] == "descending"
    assert rect["encoding"]["color"]["field"] == "fraction"
    assert len(rows(spec, rect)) == len(frame)
    assert len(OMEGA_HISTOGRAM_EDGES) == 101


def test_spectrum_frames_and_chart_mark_spikes(rng):
    vectors = rng.normal(size=(400, 60))
    vectors[:, :2] *= 10.0  # two planted spikes
    eigenvalues = gram_eigenvalues(vectors)
    fit = fit_spectrum(eigenvalues, dim=60, count=400)
    histogram, mp, spikes = depth_figures.spectrum_frames(eigenvalues, fit, bins=30)
    widths = histogram["high"] - histogram["low"]
    assert (histogram["density"] * widths).sum() == pytest.approx(1.0)
    assert histogram["count"].sum() == eigenvalues.size
    assert fit.n_spikes == 2 and spikes["eigenvalue"].tolist() == sorted(eigenvalues)[::-1][:2]
    assert mp["eigenvalue"].max() <= fit.mp_edge
    chart = depth_figures.spectrum_chart(histogram, mp, spikes, edge=fit.mp_edge, threshold=fit.spike_threshold)
    spec = chart.to_dict()
    assert [mark_type(u) for u in units(spec)] == ["rect", "line", "rule", "rule", "rule"]
    spike_rule, edge_rule, threshold_rule = of_type(spec, "rule")
    assert len(rows(spec, spike_rule)) == 2
    assert edge_rule["encoding"]["x"]["datum"] == pytest.approx(fit.mp_edge)
    assert threshold_rule["encoding"]["x"]["datum"] == pytest.approx(fit.spike_threshold)
    assert units(spec)[0]["encoding"]["x"]["scale"]["type"] == "log"
    assert title_text(spec)[1] == ["2 spike(s) above the Tracy-Widom threshold (orange lines)"]
    rendered = [m for m in rendered_marks(chart) if m["marktype"] == "rule"]
    assert len(rendered[0]["items"]) == 2


def test_rank_chart_lines_per_series_and_quantity():
    frame = pd.DataFrame(
        {
            "gamma": [0.0, 0.5, 1.0] * 2,
            "effective_rank": [100.0, 80.0, 20.0, 120.0, 120.0, 0.0],
            "participation_ratio": [50.0, 30.0, 5.0, 60.0, 60.0, 60.0],
            "series": ["trained"] * 3 + ["random control"] * 3,
        }
    )
    chart = depth_figures.rank_chart(frame, gamma_c=0.5)
    spec = chart.to_dict()
    line = of_type(spec, "line")[0]
    assert line["encoding"]["y"]["scale"]["type"] == "log"
    assert line["encoding"]["strokeDash"]["scale"]["domain"] == ["effective rank", "participation ratio"]
    assert len({r["line"] for r in rows(spec, line)}) == 4
    assert of_type(spec, "rule")[0]["encoding"]["x"]["datum"] == 0.5
    symbols = [m for m in rendered_marks(chart) if m["marktype"] == "symbol"][-1]["items"]
    assert len(symbols) == 11  # an effective rank of 0 has no logarithm and is not drawn


@pytest.fixture(scope="module")
def phase_result():
    """Diagnostics of 3 depth layers plus a post-norm extra layer (no depth fraction)."""
    from magdash.depth_statistics.accumulate import LayerSample
    from magdash.depth_statistics.depth_params import DepthParams
    from magdash.depth_statistics.diagnostics import analyze_samples
    from magdash.depth_statistics.omega import omega

    rng = np.random.default_rng(3)
    samples = []
    for layer in range(4):
        vectors = rng.normal(size=(300, 16))
        vectors[:, : layer + 1] *= 1 + 4 * layer  # sparser, more spiked with depth
        samples.append(LayerSample(layer, 16, 300, gram_eigenvalues(vectors), omega(vectors).astype(np.float32)))
    return analyze_samples(samples, n_blocks=2, params=DepthParams(n_boot=50), model="tiny")


def test_phase_result_adapters_feed_the_depth_charts(phase_result):
    order = depth_figures.order_parameter_frame({"trained": phase_result, "random control": phase_result})
    assert len(order) == 6 and set(order["layer"]) == {0, 1, 2}  # post-norm layer left out
    first = phase_result.layers[0]
    row = order.iloc[0]
    assert row["m"] == pytest.approx(first.omega.mean)
    # The band is the layer's bootstrap interval over the units (here each vector its own), not m +- z SD/sqrt(N).
    assert (row["ci_low"], row["ci_high"]) == (first.omega_mean_low, first.omega_mean_high)
    assert row["ci_low"] < row["m"] < row["ci_high"]
    ranks = depth_figures.rank_frame({"trained": phase_result})
    assert set(ranks["series"]) == {"trained", depth_figures.ISOTROPIC_SERIES}
    iso = ranks[ranks["series"] == depth_figures.ISOTROPIC_SERIES]
    assert iso["participation_ratio"].to_numpy() == pytest.approx(16 / (1 + 16 / 299))
    histogram = depth_figures.phase_omega_histogram(phase_result, merge=2)
    assert set(histogram["layer"]) == {0, 1, 2, 3}
    assert histogram.loc[histogram["layer"] == 3, "gamma"].isna().all()
    bars, mp, spikes = depth_figures.phase_spectrum_frames(phase_result, 2)
    assert len(spikes) == phase_result.diagnostics(2).spectrum.n_spikes
    order_spec = depth_figures.order_parameter_chart(
        order, gamma_c=phase_result.gamma_c, gamma_c_interval=(phase_result.order.low, phase_result.order.high)
    ).to_dict()
    assert of_type(order_spec, "rule")[0]["encoding"]["x"]["datum"] == phase_result.gamma_c
    rank_spec = depth_figures.rank_chart(ranks).to_dict()
    colour = of_type(rank_spec, "point")[0]["encoding"]["color"]["scale"]
    assert colour["domain"] == ["trained", depth_figures.ISOTROPIC_SERIES]
    assert colour["range"] == [style.SERIES_COLORS["trained"], style.SERIES_COLORS[depth_figures.ISOTROPIC_SERIES]]
    heat = depth_figures.omega_heatmap(histogram).to_dict()
    assert len(rows(heat, of_type(heat, "rect")[0])) == len(histogram)
    spectrum = depth_figures.spectrum_chart(bars, mp, spikes).to_dict()
    assert len(rows(spectrum, of_type(spectrum, "rule")[0])) == len(spikes)


def test_raw_and_adjusted_curves_jumps_and_capped_spikes(phase_result):
    import dataclasses

    adjusted = dataclasses.replace(phase_result, params=dataclasses.replace(phase_result.params, massive="drop"))
    order = pd.concat([depth_figures.order_parameter_frame({"trained": phase_result}),
                       depth_figures.order_parameter_frame({"trained": adjusted})], ignore_index=True)
    assert list(dict.fromkeys(order["view"])) == ["raw", "massive dimensions dropped"]
    spec = depth_figures.order_parameter_chart(order).to_dict()
    dash = of_type(spec, "line")[0]["encoding"]["strokeDash"]
    assert dash["field"] == "view" and dash["scale"]["domain"] == ["raw", "massive dimensions dropped"]
    assert "strokeDash" not in of_type(depth_figures.order_parameter_chart(order[order["view"] == "raw"]).to_dict(),
                                       "line")[0]["encoding"]
    jumps = depth_figures.jumps_frame({"trained": phase_result})
    assert list(jumps["rank"]) == [1, 2] and jumps["gamma"].iloc[0] == phase_result.gamma_c
    assert (jumps["ci_low"] <= jumps["change"]).all() and (jumps["change"] <= jumps["ci_high"]).all()
    # A capped fit marks no spikes on its spectrum.
    capped = fit_spectrum(0.8 ** np.arange(129), 576, 130)
    assert not capped.converged and capped.n_spikes == capped.cap
    assert depth_figures.spectrum_frames(0.8 ** np.arange(129), capped)[2].empty


def test_massive_alpha_frame_and_chart():
    layers = pd.DataFrame({
        "measure": ["eucl", "eucl", "proj"], "layer": [0, 1, 0], "label": ["e", "b1", "e"],
        "core": [False, True, False], "alpha_raw": [0.1, -0.2, 0.3], "ci_low_raw": [0.0, -0.3, 0.2],
        "ci_high_raw": [0.2, -0.1, 0.4], "alpha_dropped": [0.0, -0.5, 0.1], "ci_low_dropped": [-0.1, -0.6, 0.0],
        "ci_high_dropped": [0.1, -0.4, 0.2], "n_massive": [0, 2, 0],
    })
    frame = scaling_figures.massive_alpha_frame(layers, "eucl")
    assert len(frame) == 4 and list(frame["alpha"]) == [0.1, -0.2, 0.0, -0.5]
    assert list(frame["view"]) == ["raw", "raw", "massive dimensions dropped", "massive dimensions dropped"]
    with pytest.raises(AnalysisError, match="not analysed"):
        scaling_figures.massive_alpha_frame(layers, "pairwise")
    spec = scaling_figures.massive_alpha_chart(frame).to_dict()
    colour = of_type(spec, "line")[0]["encoding"]["color"]["scale"]
    assert colour["range"] == [scaling_figures.MASSIVE_VIEW_COLORS["raw"], scaling_figures.MASSIVE_VIEW_COLORS["massive dimensions dropped"]]


# -- tokenization ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tokenized():
    """A planted analysis with the token facts of a tokenizer splitting every digit: V steps up at
    each digit-count boundary, so the raw alpha and the adjusted alpha differ."""
    rng = np.random.default_rng(11)
    digits = np.array([len(str(int(m))) for m in MAGNITUDES])
    spread = MAGNITUDES ** -0.1 * np.exp(0.4 * (digits - 1))
    layers = [(f"L{layer}", (np.log(MAGNITUDES)[:, None, None] + spread[:, None, None]
                             * rng.normal(size=(MAGNITUDES.size, 5, 12))).astype(np.float32))
              for layer in range(N_BLOCKS + 1)]
    facts = [NumberTokens(int(m), c, "last", len(str(int(m))), (int(str(int(m))[-1]),), int(str(int(m))[-1]),
                          str(int(m))[-1], tuple(str(int(m))), len(str(int(m))), len(str(int(m))))
             for m in MAGNITUDES for c in range(5)]
    return run_analysis(iter(layers), MAGNITUDES, n_blocks=N_BLOCKS, params=AnalysisParams(n_boot=50), model="m",
                        stimuli="s", number_tokens=facts)


def test_the_scaling_points_can_be_coloured_by_token_count(tokenized, result):
    points = scaling_figures.scaling_points(tokenized, "eucl", 2)
    assert points["n_tokens"].tolist() == [len(str(int(m))) for m in MAGNITUDES]
    assert points.loc[points["magnitude"] == 1000, "kept_text"].item() == "0"
    spec = scaling_figures.scaling_figure(tokenized, "eucl", 2, by_tokens=True).to_dict()
    point = of_type(spec, "point")[0]
    assert point["encoding"]["color"]["field"] == "tokens"
    assert point["encoding"]["color"]["scale"]["domain"] == ["1", "2", "3", "4"]
    assert {row["tokens"] for row in rows(spec, point)} == {"1", "2", "3", "4"}
    assert any("token count (1, 2, 3, 4)" in line for line in title_text(spec)[1])
    plain = scaling_figures.scaling_figure(tokenized, "eucl", 2).to_dict()
    assert "field" not in of_type(plain, "point")[0]["encoding"]["color"]  # the measure's colour
    # without token facts the toggle colours nothing and says why
    untouched = scaling_figures.scaling_figure(result, "eucl", 2, by_tokens=True).to_dict()
    assert "field" not in of_type(untouched, "point")[0]["encoding"]["color"]
    assert any("no token counts recorded" in line for line in title_text(untouched)[1])
    assert vlc.vegalite_to_svg(spec, allowed_base_urls=[]).startswith("<svg")


def test_raw_and_adjusted_alpha_by_layer_and_the_strata_table(tokenized, result):
    frame = tokenization_figures.tokenization_alpha_frame(tokenized, "eucl")
    assert list(dict.fromkeys(frame["view"])) == list(tokenization_figures.TOKEN_VIEWS)
    raw = frame[frame["view"] == "raw"]
    np.testing.assert_allclose(raw["alpha"], tokenized.alphas("eucl"), equal_nan=True)
    adjusted = frame[frame["view"] == tokenization_figures.TOKEN_VIEWS[1]]["alpha"].to_numpy()
    assert np.nanmax(np.abs(adjusted - raw["alpha"].to_numpy())) > 0.05  # the steps moved the raw alpha
    spec = tokenization_figures.tokenization_figure(tokenized, "eucl").to_dict()
    colour = of_type(spec, "line")[0]["encoding"]["color"]["scale"]
    assert colour["domain"] == list(tokenization_figures.TOKEN_VIEWS) and colour["range"] == list(tokenization_figures.TOKEN_VIEW_COLORS.values())
    assert vlc.vegalite_to_svg(spec, allowed_base_urls=[]).startswith("<svg")
    strata = tokenization_figures.strata_table(tokenized, "eucl")
    assert strata["stratum"].tolist() == ["1 token", "2 tokens", "3 tokens", "4 tokens", "all (raw alpha)",
                                          "all (adjusted for the token count)"]
    assert strata["magnitudes"].tolist()[:4] == ["1-9", "10-90", "100-700", "1000"]
    assert "a fit needs 5" in strata["reason"].iloc[3]
    table = tokenization_figures.tokenization_table(tokenized, "eucl")
    assert len(table) == tokenized.n_layers
    # the steps read as text, one per token count beyond the reference, from the fit's own gamma_k
    first = tokenized.tokenization.query("measure == 'eucl'").iloc[0]
    expected = "; ".join(f"{k} tokens {v:+.3f}" for k, v in sorted(json.loads(first["steps"]).items()))
    assert table["steps"].iloc[0] == expected and expected.startswith("2 tokens ")
    assert "adjusted for the token count (strata of 1, 2, 3, 4 tokens)" in tokenization_figures.tokenization_sentence(tokenized, "eucl")
    # without token facts: an empty frame and chart, and the sentence says why
    assert tokenization_figures.tokenization_alpha_frame(result, "eucl").empty and tokenization_figures.strata_table(result, "eucl").empty
    assert "not recorded" in tokenization_figures.tokenization_sentence(result, "eucl")
    assert tokenization_figures.tokenization_figure(result, "eucl").to_dict()["title"]["subtitle"][1].startswith("no adjusted alpha")


# -- tables behind the Weber page ------------------------------------------------------------


def test_verdict_table_has_a_programme_row(result):
    table = weber_figures.verdict_frame({"a": result, "b": result, "c": result}, "eucl")
    assert table["model"].tolist() == ["a", "b", "c", "programme (majority of 3 trained models)"]
    h3 = result.hypotheses["eucl"].h3
    expected = ("supported (3/3)" if h3 else "not supported (0/3)")
    assert table.loc[3, "H3"] == expected
    assert table.loc[0, "mean_alpha"] == pytest.approx(result.hypotheses["eucl"].mean_alpha)
    core = result.core_layers
    assert table.loc[0, "h4_layers"] == f"{core[0]}-{core[-1]}"  # names the layers H4 ran over, as --core-layers does
    assert layer_span([3, 5, 6]) == "3, 5-6" and layer_span([]) == "none"
    with pytest.raises(AnalysisError, match="pairwise"):
        weber_figures.verdict_frame({"a": result}, "pairwise")
    # the stimulus bootstrap's interval leads; with 2 core layers H4's Spearman cannot reach .05, and says so
    h = result.hypotheses["eucl"]
    assert table.loc[0, "mean_alpha_ci_low"] == h.mean_alpha_ci[0] < h.mean_alpha < h.mean_alpha_ci[1]
    assert table.loc[0, "note"].startswith("H4: with 2 layers the smallest p this test can give is 1,")


def test_controls_stand_beside_their_model_and_do_not_vote(result):
    table = weber_figures.verdict_frame({"b@random": result, "a": result, "b": result, "a@random:7": result}, "eucl")
    assert table["model"].tolist()[:4] == ["a", "a@random:7", "b", "b@random"]
    assert table["role"].tolist()[:4] == ["model", "control of a", "model", "control of b"]
    assert table["model"].iloc[-1] == "programme (majority of 2 trained models)"
    h3 = result.hypotheses["eucl"].h3
    assert table["H3"].iloc[-1] == ("supported (2/2)" if h3 else "not supported (0/2)")
    alone = weber_figures.verdict_frame({"a@random": result}, "eucl")  # only a reference: no programme row
    assert alone["model"].tolist() == ["a@random"]


def test_noise_summary_counts_core_winners(result):
    summary = weber_figures.noise_summary({"m": result}, "eucl")
    assert len(summary) == 4
    assert summary["best_in_core_layers"].sum() == len(result.core_layers)


# -- every chart is a valid spec and renders offline -------------------------------------------


@pytest.mark.slow
def test_every_chart_renders_to_svg_offline(result):
    built = [
        scaling_figures.alpha_profile(result.fits),
        weber_figures.weber_window(scaling_figures.models_fits_frame({"a": result})),
        weber_figures.noise_model_chart(result.noise_models),
        compare_figures.compare_profiles(_comparison_frame()),
        gf.rsa_by_layer(gf.rsa_frame(result)),
    ]
    for chart in built:
        assert isinstance(chart, alt.TopLevelMixin)
        svg = vlc.vegalite_to_svg(chart.to_dict(), allowed_base_urls=[])
        assert svg.startswith("<svg")


def test_container_width_is_accepted(result):
    spec = scaling_figures.alpha_profile(result.fits, width="container").to_dict()
    assert spec["width"] == "container"


def axis_titles(node) -> list[str]:
    """Every x/y axis title set anywhere in a spec."""
    found = []
    if isinstance(node, dict):
        encoding = node.get("encoding", {})
        for channel in ("x", "y"):
            title = encoding.get(channel, {}).get("title") if isinstance(encoding.get(channel), dict) else None
            if isinstance(title, str):
                found.append(title)
        for value in node.values():
            found += axis_titles(value)
    elif isinstance(node, list):
        for item in node:
            found += axis_titles(item)
    return found


@pytest.mark.slow
def test_axis_titles_are_short_enough_for_streamlit(result):
    """Streamlit fits a chart, titles included, into its height: a long y title squashes the plot."""
    points = scaling_figures.scaling_points(result, "eucl", 3)
    gamma = np.linspace(0, 1, 5)
    order = pd.DataFrame({"gamma": gamma, "m": 0.2 + 0.1 * gamma, "ci_low": 0.19, "ci_high": 0.31, "series": "trained"})
    rho = pd.DataFrame({"layer": [0, 1, 2], "rho": [0.1, 0.8, 0.85]})
    frequency = pd.DataFrame({"magnitude": [1.0, 2.0], "count": [9, 99], "V": [1.0, 3.0]})
    built = [
        scaling_figures.scaling_scatter(points, scaling_figures.scaling_lines(points, result.fit("eucl", 3))),
        scaling_figures.alpha_profile(result.fits),
        weber_figures.weber_window(scaling_figures.models_fits_frame({"a": result})),
        weber_figures.cv_chart(weber_figures.cv_frame(result, layers=[1, 2])),
        weber_figures.e4_chart(weber_figures.e4_frame(result)),
        compare_figures.compare_profiles(_comparison_frame()),
        gf.rsa_by_layer(gf.rsa_frame(result)),
        ff.frequency_rho_by_layer(rho),
        ff.variability_vs_frequency(frequency),
        depth_figures.order_parameter_chart(order),
    ]
    titles = [title for chart in built for title in axis_titles(chart.to_dict())]
    assert "V_eucl (log scale)" in titles and style.ALPHA_TITLE in titles
    too_long = sorted({t for t in titles if len(t) > style.MAX_AXIS_TITLE})
    assert too_long == []


# -- readability: the figures as a scientist sees them -------------------------------------------


def test_count_fits_are_clipped_to_the_range_of_the_counts_with_one_tick_format():
    numbers = np.arange(1, 1001, dtype=float)
    counts = pd.DataFrame({"number": numbers, "count": np.round(1e5 * numbers ** -1.3) + 1})
    curves = pd.concat([
        pd.DataFrame({"number": numbers, "predicted": 1e5 * np.exp(-0.1 * numbers), "model": "exponential"}),
        pd.DataFrame({"number": numbers, "predicted": 1e5 * numbers ** -1.3, "model": "power law"}),
    ])
    spec = ff.frequency_loglog(counts, curves).to_dict()
    circle, line = units(spec)
    low, high = counts["count"].min(), counts["count"].max()
    for unit in (circle, line):
        assert unit["encoding"]["y"]["scale"]["domain"] == [low, high]  # the data's span, not 1e-45
        assert unit["encoding"]["y"]["axis"]["format"] == "~s"  # 1, 10, 1k, 100k: one style
    predicted = [r["predicted"] for r in rows(spec, line)]
    assert min(predicted) >= low and max(predicted) <= high
    assert {r["model"] for r in rows(spec, line)} == {"exponential", "power law"}
    # The exponential leaves the data's span at n = 93: nothing beyond is drawn.
    assert max(r["number"] for r in rows(spec, line) if r["model"] == "exponential") < 100


def test_noise_model_heatmap_gives_each_row_its_height_and_its_whole_label(result):
    spec = weber_figures.noise_model_chart(weber_figures.noise_frame(result), measure="eucl").to_dict()
    n_models = len(weber_figures.NOISE_MODEL_LABELS)
    assert spec["height"] == weber_figures.NOISE_ROW_HEIGHT * n_models + weber_figures.NOISE_CHROME_HEIGHT
    heat = of_type(spec, "rect")[-1]
    longest = max(len(label) for label in weber_figures.NOISE_MODEL_LABELS.values())
    assert heat["encoding"]["y"]["axis"]["labelLimit"] >= 7 * longest  # about 7 px a character


def test_a_depth_fraction_axis_has_a_tick_every_tenth():
    frame = pd.DataFrame({"gamma": np.arange(13) / 12, "m": 0.2, "ci_low": 0.19, "ci_high": 0.21, "series": "trained"})
    spec = depth_figures.order_parameter_chart(frame, gamma_c=0.5).to_dict()
    axis = of_type(spec, "point")[0]["encoding"]["x"]["axis"]
    assert axis["values"] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert axis["format"] == ".1f"


def test_depth_titles_name_the_colour_gamma_c_is_drawn_in():
    frame = pd.DataFrame({"gamma": [0.0, 0.5, 1.0], "m": 0.2, "ci_low": 0.19, "ci_high": 0.21, "series": "trained"})
    order = depth_figures.order_parameter_chart(frame, gamma_c=0.5).to_dict()
    ranks = depth_figures.rank_chart(frame.assign(effective_rank=5.0, participation_ratio=3.0), gamma_c=0.5).to_dict()
    for spec in (order, ranks):
        text = title_text(spec)[0]
        assert "orange dashed: gamma_c" in text and "red" not in text
        rule = next(u for u in of_type(spec, "rule") if u["encoding"]["x"].get("datum") == 0.5)
        assert rule["mark"]["color"] == style.SPIKE_COLOR == "#D55E00"  # Okabe-Ito vermillion: orange
        assert rule["mark"]["strokeDash"] == [6, 3]


def test_per_carrier_points_have_a_legend_entry(result):
    points = scaling_figures.scaling_points(result, "eucl", 3)
    carriers = scaling_figures.carrier_distances(np.ones((26, 5, 2)), MAGNITUDES, [f"c{i}" for i in range(5)]).assign(distance=1.0)
    spec = scaling_figures.scaling_scatter(points, scaling_figures.scaling_lines(points, result.fit("eucl", 3)), carriers=carriers).to_dict()
    circle = of_type(spec, "circle")[0]
    fill = circle["encoding"]["fill"]
    assert fill["scale"] == {"domain": [scaling_figures.CARRIER_POINTS], "range": [style.CARRIER_COLOR]}
    assert "legend" not in fill or fill["legend"] is not None  # shown, not suppressed
    assert spec["resolve"]["scale"]["fill"] == "independent"
    svg = vlc.vegalite_to_svg(spec)
    assert scaling_figures.CARRIER_POINTS in svg  # drawn in the rendered legend


def test_a_thousand_magnitude_rdm_is_drawn_in_blocks_with_a_note(rng):
    magnitudes = np.arange(1, 1001, dtype=float)
    rdm = np.abs(np.log(magnitudes)[:, None] - np.log(magnitudes)[None, :])
    spec = gf.rdm_heatmap(gf.rdm_frame(rdm, magnitudes)).to_dict()
    cells = rows(spec, units(spec)[0])
    assert len(cells) == style.MAX_RDM_SIDE**2 == 2500  # not 1,000,000
    assert sorted({c["a"] for c in cells})[:3] == [1.0, 21.0, 41.0]
    first = next(c for c in cells if c["a"] == 1.0 and c["b"] == 21.0)
    assert first["dissimilarity"] == pytest.approx(rdm[:20, 20:40].mean())
    assert "1,000 magnitudes in blocks of 20" in " ".join(title_text(spec)[1])
    small = gf.rdm_heatmap(gf.rdm_frame(rdm[:26, :26], magnitudes[:26])).to_dict()
    assert len(rows(small, units(small)[0])) == 26 * 26 and title_text(small)[1] == []


def test_dense_scatters_are_thinned_with_a_note(result):
    magnitudes = np.arange(1, 1001, dtype=float)
    carriers = pd.DataFrame({
        "magnitude": np.repeat(magnitudes, 20), "carrier": np.tile([f"c{i}" for i in range(20)], 1000), "distance": 1.0,
    })
    points = scaling_figures.scaling_points(result, "eucl", 3)
    spec = scaling_figures.scaling_scatter(points, scaling_figures.scaling_lines(points, result.fit("eucl", 3)), carriers=carriers).to_dict()
    drawn = rows(spec, of_type(spec, "circle")[0])
    assert len(drawn) <= style.MAX_POINTS
    assert len({r["magnitude"] for r in drawn}) == 250 and len(drawn) == 20 * 250
    assert "per-carrier points: 1 magnitude in 4 drawn (5,000 of 20,000)" in title_text(spec)[1]
    frame = pd.DataFrame({"magnitude": magnitudes, "count": magnitudes, "V": 1.0})
    labelled = ff.variability_vs_frequency(frame.head(style.MAX_TEXT_LABELS)).to_dict()
    unlabelled = ff.variability_vs_frequency(frame).to_dict()
    assert len(of_type(labelled, "text")) == 1 and of_type(unlabelled, "text") == []
