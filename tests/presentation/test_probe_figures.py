"""The probes' frames, charts, figures, tables and report section (magdash.presentation.probe_figures)
on planted layers: a layer left out for Inf/NaN vectors is a gap, values without a logarithm are
not drawn on log axes and the subtitle says so, R² far below 0 is drawn at the axis floor."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import vl_convert as vlc

from magdash.errors import AnalysisError
from magdash.presentation import probe_figures as pf
from magdash.presentation.report import sections
from magdash.probes.probe import run_probes
from magdash.probes.probe_params import ProbeParams

MAGNITUDES = np.unique(np.round(np.geomspace(2, 500, 14)))
PARAMS = ProbeParams(n_boot=30, magnitude_folds=3)


def layers(code: float, seed: int) -> list[tuple[str, np.ndarray]]:
    """Four layers of (14 magnitudes, 4 carriers, 6 d): log n along one direction with ``code``
    times the layer index as its strength, in noise; layer 2 holds a NaN vector."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=6)
    found = []
    for layer in range(4):
        vectors = code * layer * np.log(MAGNITUDES)[:, None, None] * direction + 0.1 * rng.normal(size=(14, 4, 6))
        if layer == 2:
            vectors[3, 1, 0] = np.nan
        found.append((f"L{layer}", vectors.astype(np.float32)))
    return found


@pytest.fixture(scope="module")
def results():
    trained = run_probes(layers(2.0, 0), MAGNITUDES, PARAMS, model="planted", stimuli="s")
    control = run_probes(layers(0.0, 1), MAGNITUDES, PARAMS, model="planted@random", stimuli="s")
    return {"trained": trained, "random control": control}


def unit_rows(spec: dict) -> list[list[dict]]:
    """The rows of the chart's own data and of every layer with data of its own (inline, or
    consolidated into ``datasets``)."""
    found = []
    for unit in [spec, *spec["layer"]]:  # data shared by every layer sits on the chart itself
        data = unit.get("data", {})
        if "values" in data:
            found.append(data["values"])
        elif "name" in data:
            found.append(spec["datasets"][data["name"]])
    return found


def test_the_r2_frame_has_every_series_and_a_gap_at_the_left_out_layer(results):
    frame = pf.score_frame(results, "carrier", "log")
    assert list(dict.fromkeys(frame["series"])) == [pf.REAL, pf.CONTROL_TASK, pf.RANDOM, pf.BASELINE]
    assert len(frame) == 4 * 4  # every layer of every series, the left-out one included
    left_out = frame[frame["layer"] == 2]
    assert left_out["r2"].isna().all() and (left_out["label"] == "L2").all()
    real = frame[frame["series"] == pf.REAL].set_index("layer")["r2"]
    assert real[3] > 0.9 and real[3] == pytest.approx(results["trained"].score_table()["r2"].iloc[-1])
    baseline = frame[frame["series"] == pf.BASELINE]
    scores = results["trained"].score_table()
    assert baseline["r2"].dropna().tolist() == pytest.approx(scores["baseline_r2"].tolist())
    assert baseline["r2_low"].isna().all()  # drawn without an interval


def test_the_best_layer_is_where_unseen_magnitudes_are_decoded_best(results):
    scores = results["trained"].score_table("magnitude", "log", "real")
    assert pf.best_layer(results["trained"]) == int(scores.loc[scores["r2"].idxmax(), "layer"]) == 3
    sentence = pf.probe_sentence(results)
    assert "planted: a linear probe of log n decodes unseen magnitudes best at layer 3 (L3) at" in sentence
    assert "digit count gives a held-out-magnitude R² of" in sentence
    assert "; planted@random: beta " in sentence and "n^beta" in sentence


def test_the_beta_chart_draws_each_model_beside_its_constant_error_null(results):
    frame = pf.scaling_frame(results)
    series = list(dict.fromkeys(frame["series"]))
    assert series == ["planted", "planted@random", "planted" + pf.NULL_SUFFIX, "planted@random" + pf.NULL_SUFFIX]
    null = frame[frame["series"] == "planted" + pf.NULL_SUFFIX].set_index("layer")
    scaling = results["trained"].decoded_scaling.query("target == 'log'").set_index("layer")
    assert null.loc[3, "beta"] == pytest.approx(scaling.loc[3, "beta_null"])
    assert null.loc[3, "beta_high"] == pytest.approx(scaling.loc[3, "beta_null_high"])
    spec = pf.beta_chart(frame).to_dict()
    line = next(unit for unit in spec["layer"] if unit.get("mark", {}).get("type") == "line")
    assert line["encoding"]["strokeDash"]["field"] == "kind"  # the nulls dashed
    rules = [unit for unit in spec["layer"] if unit.get("mark", {}).get("type") == "rule"]
    assert len(rules) == 1  # at 0 only: beta = 1 is the null of a log read-out, not a finding


def test_r2_far_below_zero_is_drawn_at_the_floor_and_said(results):
    frame = pf.score_frame(results, "magnitude", "log")
    frame.loc[frame["series"] == pf.CONTROL_TASK, ["r2", "r2_low", "r2_high"]] = [-4.0, -6.0, -2.0]
    spec = pf.r2_chart(frame).to_dict()
    line = next(unit for unit in spec["layer"] if unit.get("mark", {}).get("type") == "line")
    assert line["encoding"]["y"]["scale"] == {"domain": [pf.R2_FLOOR, 1.0], "clamp": True}
    assert spec["title"]["subtitle"] == ["R² below -1 drawn at -1 (the tooltip has the value)"]
    tame = frame.assign(r2=0.55, r2_low=0.31, r2_high=0.6)
    spec = pf.r2_chart(tame).to_dict()
    assert "subtitle" not in spec["title"]
    line = next(unit for unit in spec["layer"] if unit.get("mark", {}).get("type") == "line")
    assert line["encoding"]["y"]["scale"]["domain"] == [0.0, 1.0]
    spec = pf.r2_chart(tame.assign(r2_low=-0.34)).to_dict()
    line = next(unit for unit in spec["layer"] if unit.get("mark", {}).get("type") == "line")
    assert line["encoding"]["y"]["scale"]["domain"] == [-0.4, 1.0]


def test_decoded_chart_leaves_out_what_has_no_logarithm_and_says_so():
    frame = pd.DataFrame({"magnitude": [1.0, 10.0, 100.0, 1000.0], "mean_decoded": [1.2, -3.0, 90.0, 1100.0],
                          "sd_decoded": [2.0, 1.0, 10.0, 100.0], "weber_fraction": [2.0, 0.1, 0.1, 0.1]})
    frame["low"], frame["high"] = frame["mean_decoded"] - frame["sd_decoded"], frame["mean_decoded"] + frame["sd_decoded"]
    spec = pf.decoded_chart(frame).to_dict()
    identity, bars, points = unit_rows(spec)
    assert [row["magnitude"] for row in points] == [1.0, 100.0, 1000.0]
    domain_low = spec["layer"][0]["encoding"]["y"]["scale"]["domain"][0]
    assert bars[0]["low"] == domain_low and bars[0]["high"] == 3.2  # the bar below 0 ends at the axis floor
    assert [row["magnitude"] for row in identity] == [row["mean_decoded"] for row in identity]
    assert spec["title"]["subtitle"] == ["1 magnitude(s) with mean n-hat <= 0 or none not drawn (log axes)"]
    for unit in spec["layer"]:
        assert unit["encoding"]["x"]["scale"]["type"] == "log"


def test_weber_chart_draws_positive_fractions_on_log_axes():
    frame = pd.DataFrame({"series": ["a", "a", "b", "b"], "magnitude": [1.0, 2.0, 1.0, 2.0],
                          "weber_fraction": [0.2, 0.0, 0.3, np.nan], "sd_decoded": [0.2, 0.0, 0.3, np.nan]})
    spec = pf.weber_chart(frame).to_dict()
    (drawn,) = {tuple(r["weber_fraction"] for r in rows) for rows in unit_rows(spec)}
    assert drawn == (0.2, 0.3)
    assert spec["title"]["subtitle"] == ["2 point(s) with SD(n-hat) = 0 or none not drawn (log axes)"]


def test_every_figure_renders_and_every_table_has_its_rows(results):
    figures = [pf.r2_figure(results, "carrier"), pf.r2_figure(results, "magnitude", "linear"),
               pf.selectivity_figure(results), pf.beta_figure(results), pf.decoded_figure(results, 3),
               pf.weber_figure(results, 3, "linear")]
    specs = [chart.to_dict(validate=True) | {"width": 400} for chart in figures]  # valid Vega-Lite, every one
    for spec in specs[::3]:  # and drawn (a log axis with a bad domain fails here)
        assert vlc.vegalite_to_svg(spec, allowed_base_urls=[]).startswith("<svg")
    table = pf.layer_table(results)
    assert list(table["layer"]) == [0, 1, 2, 3] and table.loc[2, ["r2_carrier_real", "beta"]].isna().all()
    assert {"r2_carrier_random", "r2_magnitude_random", "cosine_pc1", "weber_mean", "baseline_r2_magnitude_real",
            "r2_within_strata_magnitude_real", "in_best_band", "beta_null", "beta_null_p", "beta_random"} <= set(
        table.columns)
    assert len(pf.comparison_table(results)) == 2 * 3  # two schemes x the three probed layers
    assert pf.comparison_table({"trained": results["trained"]}).empty
    decoded = pf.decoded_table(results, 3)
    assert list(dict.fromkeys(decoded["model"])) == ["planted", "planted@random"] and len(decoded) == 2 * 14
    assert set(pf.scores_table(results, "linear")["target"]) == {"linear"}


def test_a_target_the_probes_did_not_read_is_a_message(results):
    only_log = {"trained": run_probes(layers(2.0, 0)[:2], MAGNITUDES, ProbeParams(n_boot=0, targets=("log",),
                                                                                  magnitude_folds=3))}
    with pytest.raises(AnalysisError, match="read log, not 'linear'"):
        pf.r2_figure(only_log, "carrier", "linear")


def test_the_report_section_holds_the_page(results):
    section = sections.probe_section(results)
    assert section.title == "Probes: is magnitude decodable? (planted)"
    assert len(section.figures) == 6 and [title for title, _ in section.tables][1].startswith("Held-out scores beside")
    assert any("layer 2 holds Inf/NaN" in line for line in section.text)  # the left-out layer, said
    alone = sections.probe_section({"trained": results["trained"]}, layer=1)
    assert len(alone.tables) == 2 and "layer 1 of planted" in alone.figures[-1][0]
