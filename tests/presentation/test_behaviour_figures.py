"""The Behaviour page's figures (magdash.presentation.behaviour_figures) on small planted result
frames of the contract's columns: the data points' Wilson intervals, the curves per reference, a
Weber fraction beyond the tested ratios drawn at the design's edge (never a negative number on a
log axis), the Weber-law line, the position bias, and behaviour against representation with its
number of points; every chart a valid spec that renders offline."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest
import vl_convert as vlc
from scipy.stats import norm

from magdash.errors import AnalysisError
from magdash.formatting import is_labelled
from magdash.presentation import behaviour_figures as bf
from magdash.presentation import chart_style as style

REFERENCES = (10.0, 100.0, 1000.0)
RATIOS = (1.05, 1.1, 1.2, 1.5, 2.0, 3.0)


def _cells() -> pd.DataFrame:
    rows = []
    for reference in REFERENCES:
        for ratio in RATIOS:
            p = 0.5 + 0.5 * norm.cdf((np.log(ratio) - 0.2) / 0.15)
            rows.append({"task": "t", "reference": reference, "ratio": ratio, "n_a": 20, "n_b": 20,
                         "accuracy_a": p + 0.05, "accuracy_b": p - 0.05, "accuracy": p, "bias": 0.1,
                         "n_unanswered": 0})
    return pd.DataFrame(rows)


def _fits() -> pd.DataFrame:
    # reference 10 inside the tested ratios, 100 below them (negative, as the paper's -0.174), 1000 at chance
    return pd.DataFrame({
        "task": "t", "reference": list(REFERENCES), "variant": "choice", "conventions": "magdash",
        "mu": [0.2, -0.3, np.nan], "sigma": [0.15, 0.2, np.nan], "lapse": [0.02, 0.0, np.nan],
        "weber_fraction": [0.25, -0.174, np.nan], "wf_low": [0.2, -0.3, np.nan], "wf_high": [0.31, 0.01, np.nan],
        "in_range": [True, False, False], "status": ["ok", "outside tested ratios", "at chance"],
        "n_trials": [240, 240, 240]})


def _curves() -> pd.DataFrame:
    grid = np.exp(np.linspace(np.log(1.05), np.log(3.0), 20))
    return pd.concat([pd.DataFrame({"task": "t", "reference": reference, "variant": "choice", "conventions": "magdash",
                                    "ratio": grid, "p": 0.5 + 0.5 * norm.cdf((np.log(grid) - 0.2) / 0.15)})
                      for reference in REFERENCES], ignore_index=True)


@dataclass(frozen=True)
class Planted:
    """A behaviour result's frames as the contract lists them (magdash.behaviour builds the real ones)."""

    model: str = "planted"
    cells: pd.DataFrame = field(default_factory=_cells)
    fits: pd.DataFrame = field(default_factory=_fits)
    curves: pd.DataFrame = field(default_factory=_curves)
    weber_law: pd.DataFrame = field(default_factory=lambda: pd.DataFrame({
        "task": ["t"], "variant": ["choice"], "conventions": ["magdash"], "slope": [0.12], "low": [-0.4],
        "high": [0.6], "n_references": [1], "status": ["ok"]}))
    position_bias: pd.DataFrame = field(default_factory=lambda: pd.DataFrame({
        "task": "t", "reference": list(REFERENCES), "p_choose_a": [0.5, 0.55, 0.9], "bias": [0.0, 0.1, 0.8],
        "low": [-0.12, -0.02, 0.72], "high": [0.12, 0.22, 0.86]}))  # the bias's interval (2 P(A) - 1)


@pytest.fixture
def result() -> Planted:
    return Planted()


def _values(spec: dict, layer: dict) -> list[dict]:
    """A layer's inline records (Altair moves them to the spec's ``datasets``)."""
    data = layer.get("data", {})
    return spec.get("datasets", {}).get(data["name"], []) if "name" in data else data.get("values", [])


def _layer_values(spec: dict) -> list[list[dict]]:
    return [_values(spec, layer) for layer in spec["layer"]]


def test_the_points_carry_wilson_intervals_on_the_measured_trials(result):
    points = bf.points_frame(result, "t")
    assert len(points) == len(REFERENCES) * len(RATIOS)
    assert (points["n"] == 40).all()
    row = points.iloc[0]
    p, n, z = row["accuracy"], 40, 1.96  # the Wilson score interval written out
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert row["low"] == pytest.approx(centre - half, abs=1e-12) and row["high"] == pytest.approx(centre + half, abs=1e-12)
    assert (points["low"] < points["accuracy"]).all() and (points["accuracy"] < points["high"]).all()
    assert set(points["series"]) == {"reference 10", "reference 100", "reference 1000"}


def test_the_psychometric_chart_draws_curves_points_and_chance_on_a_log_ratio_axis(result):
    spec = bf.psychometric_figure(result, "t").to_dict()
    rule, curve, bars, points = spec["layer"]
    assert rule["encoding"]["y"]["datum"] == 0.5
    assert curve["mark"]["type"] == "line" and len(_values(spec, curve)) == 60
    assert points["encoding"]["x"]["scale"]["type"] == "log"
    assert points["encoding"]["color"]["scale"]["range"] == list(style.MODEL_COLORS[:3])
    assert "Wilson" in json.dumps(spec["title"])
    with pytest.raises(AnalysisError, match="no fitted curves for task='t', variant='graded'"):
        bf.psychometric_figure(result, "t", "graded")


def test_a_weber_fraction_beyond_the_tested_ratios_is_drawn_at_the_edge_not_as_its_number(result):
    frame = bf.weber_frame(result, "t")
    assert list(frame["placement"]) == [bf.INSIDE, bf.BELOW, bf.UNDEFINED]
    assert frame["drawn"].iloc[0] == pytest.approx(0.25)
    assert frame["drawn"].iloc[1] == pytest.approx(0.05)  # the smallest tested ratio, 1.05, minus 1
    assert np.isnan(frame["drawn"].iloc[2])
    assert np.isnan(frame["wf_low_drawn"].iloc[1])  # no interval drawn for a threshold the design misses
    spec = bf.weber_figure(result, "t").to_dict()
    drawn = [value for values in _layer_values(spec) for row in values for key, value in row.items()
             if key in ("drawn", "wf_low_drawn", "wf_high_drawn") and value is not None]
    assert drawn and min(drawn) > 0  # nothing a log axis cannot show
    text = json.dumps(spec["title"])
    assert "slope of log WF on log reference 0.12 [-0.40, 0.60] over 1 references" in text
    assert "not drawn (no Weber fraction): reference 1000 (at chance)" in text
    shapes = spec["layer"][-1]["encoding"]["shape"]["scale"]
    assert shapes["domain"] == [bf.INSIDE, bf.BELOW] and shapes["range"] == ["circle", "triangle-down"]


def test_the_weber_law_line_is_the_geometric_mean_of_the_fractions_inside(result):
    fits = _fits().assign(weber_fraction=[0.1, 0.4, 0.2], in_range=True, wf_low=0.05, wf_high=0.5)
    frame = bf.weber_frame(Planted(fits=fits), "t")
    line = bf.weber_law_line(frame)
    assert line["drawn"].tolist() == pytest.approx([0.2, 0.2])  # (0.1 x 0.4 x 0.2)^(1/3)
    assert line["reference"].tolist() == [10.0, 1000.0]
    assert bf.weber_law_line(bf.weber_frame(Planted(fits=fits.assign(in_range=False)), "t")).empty


def test_the_slope_sentence_says_why_there_is_none():
    law = pd.DataFrame({"task": ["t"], "variant": ["choice"], "conventions": ["magdash"], "slope": [np.nan],
                        "low": [np.nan], "high": [np.nan], "n_references": [1], "status": ["fewer than 3 references"]})
    assert bf.slope_sentence(Planted(weber_law=law), "t") == (
        "no slope of log WF on log reference: fewer than 3 references (1 reference(s) with a Weber fraction)")


def test_the_position_bias_chart_draws_p_choose_a_with_its_interval_and_the_half_line(result):
    spec = bf.bias_figure(result, "t").to_dict()
    rule, bars, points = spec["layer"]
    assert rule["encoding"]["y"]["datum"] == 0.5
    assert [row["p_choose_a"] for row in _values(spec, points)] == [0.5, 0.55, 0.9]
    assert bars["encoding"]["y2"]["field"] == "high"
    # the bias's interval drawn on P(choose A)'s scale, (1 + bias) / 2: around each point, not around 0
    drawn = _values(spec, bars)
    assert [row["low"] for row in drawn] == pytest.approx([0.44, 0.49, 0.86])
    assert [row["high"] for row in drawn] == pytest.approx([0.56, 0.61, 0.93])
    assert all(row["low"] < row["p_choose_a"] < row["high"] for row in drawn)


def test_behaviour_against_representation_keeps_the_references_with_both_and_counts_them(result):
    fits = _fits().assign(weber_fraction=[0.25, 0.3, 0.5], in_range=[True, True, False], wf_low=0.2, wf_high=0.6)
    planted = Planted(fits=fits)
    representation = pd.DataFrame({"reference": [10, 100, 1000], "value": [0.1, np.nan, 0.3], "measure": "CV(n)"})
    frame = bf.representation_frame(planted, representation, "t")
    assert frame["reference"].tolist() == [10.0]  # 100: no measure, 1000: beyond the tested ratios
    spec = bf.representation_figure(planted, representation, "t").to_dict()
    assert "n = 1 reference(s) (too few for a correlation)" in json.dumps(spec["title"])
    assert spec["layer"][1]["encoding"]["x"]["title"] == "CV(n)"


def test_every_behaviour_chart_renders_to_svg_offline_with_short_axis_titles(result):
    representation = pd.DataFrame({"reference": [10.0], "value": [0.1], "measure": "CV(n)"})
    charts = [bf.psychometric_figure(result, "t"), bf.weber_figure(result, "t"), bf.bias_figure(result, "t"),
              bf.representation_figure(result, representation, "t")]
    for chart in charts:
        spec = chart.to_dict()  # validated against the Vega-Lite schema
        assert vlc.vegalite_to_svg(spec, allowed_base_urls=[]).startswith("<svg")
        titles = [encoding["title"] for layer in spec["layer"] for encoding in layer.get("encoding", {}).values()
                  if isinstance(encoding, dict) and isinstance(encoding.get("title"), str)]
        assert all(len(title) <= style.MAX_AXIS_TITLE for title in titles)


# -- the sentences beside the figures, the report's section -------------------------------------


def test_the_unmeasured_trials_are_counted_and_the_mass_named():
    cells = _cells()
    cells.loc[0, "n_unanswered"] = 7
    cells.loc[1, "n_unanswered"] = 5
    sentence = bf.unmeasured_sentence(Planted(cells=cells), "t", 0.5)
    total = 12 + 40 * len(cells)
    assert sentence == (f"12 of {total:,} trials of planted (t) not measured: the model put under 50% of its "
                        "probability on the two options, so they are left out of the fits.")
    assert bf.unmeasured_sentence(Planted(), "t", 0.5) is None


def test_the_position_bias_sentence_names_the_references_whose_interval_misses_one_half(result):
    sentence = bf.position_bias_sentence(result, "t")
    assert sentence.startswith("planted (t) prefers one position whatever the numbers at 1 of 3 references")
    assert "reference 1000: P(choose A) 0.90 [0.86, 0.93]" in sentence and "reference 100:" not in sentence
    unbiased = result.position_bias.assign(p_choose_a=0.5, bias=0.0, low=-0.1, high=0.1)
    assert "no position bias" in bf.position_bias_sentence(Planted(position_bias=unbiased), "t")


def test_the_thresholds_beyond_the_tested_ratios_are_said_as_such(result):
    below, undefined = bf.outside_range_sentences(result, "t")
    assert below.startswith("Reference 100: the fitted threshold is below the tested ratios 1.05-3 (Weber fraction "
                            "-0.174 from the fit; outside tested ratios)")
    assert undefined == "Reference 1000: no Weber fraction (at chance)."
    assert bf.outside_range_sentences(result, "t", "graded") == []


def test_core_cv_is_the_mean_over_the_core_layers_at_each_reference():
    @dataclass
    class Analysis:  # the three fields core_cv_frame reads of an AnalysisResult
        magnitudes: np.ndarray
        core_layers: list[int]
        values: dict[str, np.ndarray]

    cv = np.array([[9.0, 9.0, 9.0], [0.1, 0.2, 0.3], [0.3, 0.4, 0.5]])
    analysis = Analysis(np.array([10.0, 30.0, 100.0]), [1, 2], {"cv": cv})
    frame = bf.core_cv_frame(analysis, [100, 10, 1000])  # type: ignore[arg-type]
    assert frame["reference"].tolist() == [10.0, 100.0]  # 1000 is not among the magnitudes
    assert frame["value"].tolist() == pytest.approx([0.2, 0.4])
    assert set(frame["measure"]) == {bf.CORE_CV}


def test_the_report_section_shows_the_pages_figures_and_sentences(result):
    from magdash.presentation.report.sections import behaviour_section

    section = behaviour_section(result, "t", 0.5)
    assert [title for title, _ in section.figures] == [
        "Psychometric curves, planted, t", "Weber fraction against the reference, planted, t", "Position bias, planted, t"]
    assert any("prefers one position" in line for line in section.text)
    table = section.tables[0][1]
    assert len(table) == 3 and table["behaviour_wf"].iloc[1] == pytest.approx(-0.174)
    assert list(table["placement"]) == [bf.INSIDE, bf.BELOW, bf.UNDEFINED]
    assert all(is_labelled(column) for column in table.columns)  # its headers: formatting.COLUMNS
    representation = pd.DataFrame({"reference": [10.0], "value": [0.1], "measure": "CV(n)"})
    assert len(behaviour_section(result, "t", 0.5, representation=representation).figures) == 4


def test_a_threshold_without_a_fraction_is_placed_by_its_ratio(result):
    # magdash's conventions: r* below 1 or above the design leaves the fraction undefined; r* tells the side
    fits = _fits().assign(weber_fraction=[0.25, np.nan, np.nan], threshold=[1.25, 0.9, 4.0],
                          status=["ok", "threshold below ratio 1", "above the tested ratios"])
    planted = Planted(fits=fits)
    frame = bf.weber_frame(planted, "t")
    assert list(frame["placement"]) == [bf.INSIDE, bf.BELOW, bf.ABOVE]
    assert frame["drawn"].tolist() == pytest.approx([0.25, 0.05, 2.0])
    sentences = bf.outside_range_sentences(planted, "t")
    assert sentences[1] == ("Reference 1000: the fitted threshold is above the tested ratios 1.05-3 (no Weber "
                            "fraction), which the design does not measure; it is shown at "
                            "the edge, not as a number.")


def test_a_fit_at_chance_is_undefined_whatever_threshold_its_optimiser_ended_on(result):
    # Llama's B2 at reference 30: at chance, its r* (55) an optimiser's end point, not a threshold above the design
    fits = _fits().assign(weber_fraction=np.nan, threshold=[0.9, 55.0, 0.9],
                          status=["threshold below ratio 1", "at chance", "at chance"])
    frame = bf.weber_frame(Planted(fits=fits), "t")
    assert list(frame["placement"]) == [bf.BELOW, bf.UNDEFINED, bf.UNDEFINED]
    assert frame["drawn"].isna().tolist() == [False, True, True]
    assert bf.outside_range_sentences(Planted(fits=fits), "t")[1:] == [
        "Reference 100: no Weber fraction (at chance).", "Reference 1000: no Weber fraction (at chance)."]


def test_the_reference_axes_reach_beyond_the_first_and_last_reference(result):
    # the points at references 10 and 1000 drawn whole, not halved by the plot's edge
    for spec in (bf.weber_figure(result, "t").to_dict(), bf.bias_figure(result, "t").to_dict()):
        domains = [layer["encoding"]["x"]["scale"]["domain"] for layer in spec["layer"]
                   if layer.get("encoding", {}).get("x", {}).get("field") == "reference"]
        assert domains and all(domain == pytest.approx([10 / bf.REFERENCE_MARGIN, 1000 * bf.REFERENCE_MARGIN])
                               for domain in domains)


def test_an_unbounded_interval_end_is_drawn_to_the_designs_edge(result):
    # Llama's B1 at reference 30 (magdash conventions, choice): WF 0.474 [0, inf]
    fits = _fits().assign(weber_fraction=[0.474, 0.3, 0.2], wf_low=[0.0, np.nan, 0.1], wf_high=[np.inf, 0.5, np.nan],
                          in_range=True, status="ok")
    frame = bf.weber_frame(Planted(fits=fits), "t")
    assert frame["wf_low_drawn"].iloc[0] == pytest.approx(0.05) and frame["wf_high_drawn"].iloc[0] == pytest.approx(2.0)
    assert np.isnan(frame["wf_low_drawn"].iloc[1]) and np.isnan(frame["wf_high_drawn"].iloc[2])  # a missing end: none


def test_a_task_without_a_measured_trial_is_said_so_in_the_report_without_figures():
    from magdash.presentation.report.sections import behaviour_section

    cells = _cells()
    cells["n_unanswered"] = cells["n_a"] + cells["n_b"]
    cells[["n_a", "n_b"]] = 0
    silent = Planted(model="control@random", cells=cells, position_bias=Planted().position_bias.iloc[0:0])
    assert bf.measured_trials(silent, "t") == 0 and bf.measured_trials(Planted(), "t") == 40 * len(cells)
    section = behaviour_section(silent, "t", 0.5)
    assert section.figures == [] and section.tables == []
    assert section.text[0].startswith(f"{40 * len(cells):,} of {40 * len(cells):,} trials of control@random (t) not measured")
    assert section.text[1].startswith("No trial of control@random (t) was measured, so there is nothing to fit or draw")
    assert "min_option_mass=0" in section.text[1]


def test_the_points_of_one_ratio_are_spread_by_reference_and_keep_their_true_ratio(result):
    points = bf.points_frame(result, "t")
    spread = points.pivot(index="ratio", columns="reference", values="drawn_ratio")
    for ratio, row in spread.iterrows():
        drawn = row.to_numpy()
        assert np.all(np.diff(drawn) > 0)  # one reference after another, in order
        assert np.exp(np.mean(np.log(drawn))) == pytest.approx(ratio)  # centred on the true ratio
        assert drawn[-1] / drawn[0] == pytest.approx(bf.POINT_SPREAD ** (len(drawn) - 1))
    spec = bf.psychometric_figure(result, "t").to_dict()
    _, _, bars, dots = spec["layer"]
    assert bars["encoding"]["x"]["field"] == dots["encoding"]["x"]["field"] == "drawn_ratio"
    assert "ratio" in [tip["field"] for tip in dots["encoding"]["tooltip"]]
