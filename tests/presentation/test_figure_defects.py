"""The figure defects of issue 39 (the pages as a researcher reads them), each on the spec or the
rendered chart: log scales without zero, the token colours against the fit line, legends not cut,
stable model colours, the post-norm layer named, wide numbers formatted (the container's autosize
is checked on the pages: tests/app/test_pages.py)."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import vl_convert as vlc

from magdash.formatting import WIDE_FORMAT, needs_wide_format
from magdash.presentation import chart_style as style
from magdash.presentation import depth_figures, scaling_figures, weber_figures
from tests.presentation.test_charts import of_type, result, rows, title_text, tokenized  # noqa: F401 (fixtures)


def scales(node) -> list[dict]:
    found = []
    if isinstance(node, dict):
        if isinstance(node.get("scale"), dict):
            found.append(node["scale"])
        for value in node.values():
            found += scales(value)
    elif isinstance(node, list):
        for value in node:
            found += scales(value)
    return found


def test_a_log_scale_carries_no_zero(result, tokenized):  # noqa: F811
    for spec in (scaling_figures.scaling_figure(result, "eucl", 2).to_dict(), scaling_figures.scaling_figure(tokenized, "eucl", 2, by_tokens=True).to_dict(),
                 weber_figures.cv_figure(result).to_dict()):
        logs = [s for s in scales(spec) if s.get("type") == "log"]
        assert logs and not any("zero" in s for s in logs)


def test_token_colours_are_never_the_fit_line_and_the_line_legend_is_drawn_once(tokenized):  # noqa: F811
    assert not set(style.TOKEN_COLORS) & ({*style.MEASURE_COLORS.values(), style.REFERENCE_COLOR, style.FIT_COLOR})
    for measure in ("eucl", "proj"):
        spec = scaling_figures.scaling_figure(tokenized, measure, 2, by_tokens=True).to_dict()
        point_range = of_type(spec, "point")[0]["encoding"]["color"]["scale"]["range"]
        line = of_type(spec, "line")[0]["encoding"]["color"]
        assert not set(line["scale"]["range"]) & set(point_range)
        assert line["legend"] is None  # the dash legend says the lines
        legends = vlc.vegalite_to_vega(spec)["legends"]
        assert [legend.get("title") for legend in legends].count("line") == 1
        assert [legend for legend in legends if legend.get("title") == "tokens"][0]["columns"] == 4
    plain = of_type(scaling_figures.scaling_figure(tokenized, "proj", 2).to_dict(), "line")[0]["encoding"]["color"]
    assert style.MEASURE_COLORS["V_proj"] in plain["scale"]["range"]  # without tokens: the measure's colour


def test_legend_labels_are_not_cut():
    long = "massive dimensions dropped, then standardised"  # beyond Vega's default 160 px
    frame = pd.DataFrame({"view": ["raw", "raw", long, long], "layer": [1, 2, 1, 2], "alpha": [0.1, 0.2, 0.1, 0.3],
                          "ci_low": np.nan, "ci_high": np.nan, "core": True})
    svg = vlc.vegalite_to_svg(scaling_figures.massive_alpha_chart(frame).to_dict(), allowed_base_urls=[])
    assert long in svg and "…" not in svg
    depth = pd.DataFrame({"gamma": [0.5, 1.0, 0.5, 1.0], "m": 0.2, "ci_low": 0.1, "ci_high": 0.3, "series": "trained",
                          "view": ["raw", "raw", long, long]})
    svg = vlc.vegalite_to_svg(depth_figures.order_parameter_chart(depth, baseline=None).to_dict(), allowed_base_urls=[])
    assert long in svg and "…" not in svg
    assert style.solid_legend(alt.Color("a:N")).to_dict()["legend"]["labelLimit"] == style.LEGEND_LABEL_LIMIT == 0


def test_a_model_keeps_its_colour_whichever_models_are_shown(result):  # noqa: F811
    registered = ("minilm", "minilm@random", "smollm2", "smollm2@random")

    def colour(names, name, **kw):
        scale = style.model_colors(names, registered, **kw).to_dict()
        return dict(zip(scale["domain"], scale["range"], strict=True))[name]

    assert colour(["smollm2"], "smollm2") == colour(["minilm", "smollm2"], "smollm2") == colour(
        ["smollm2@random", "smollm2", "minilm"], "smollm2") == style.MODEL_COLORS[2]
    fits = scaling_figures.models_fits_frame({"smollm2": result, "minilm": result})
    alone = scaling_figures.models_fits_frame({"minilm": result})
    for frame in (fits, alone):
        point = of_type(weber_figures.weber_window(frame, registered=registered).to_dict(), "point")[0]["encoding"]["color"]["scale"]
        assert dict(zip(point["domain"], point["range"], strict=True))["minilm"] == style.MODEL_COLORS[0]
    # a name the store does not know takes a colour no known one of the chart has
    scale = style.model_colors(["minilm", "other"], registered).to_dict()
    assert scale["range"][1] != scale["range"][0]


def test_the_post_norm_layer_is_named_on_a_depth_fraction_axis(result):  # noqa: F811
    fits = scaling_figures.models_fits_frame({"m": result})  # 4 blocks and 6 layers: the last at gamma 1.25
    spec = weber_figures.weber_window(fits, x="gamma").to_dict()
    labels = [u for u in of_type(spec, "text") if u["encoding"]["text"]["field"] == "text"]
    drawn = rows(spec, labels[0])
    assert [(row["text"], row["gamma"]) for row in drawn] == [("post-norm", 1.25)]
    assert style.POST_NORM_NOTE in title_text(spec)[1]
    assert style.POST_NORM_NOTE in title_text(scaling_figures.alpha_profile(scaling_figures.fits_frame(result), x="gamma").to_dict())[1]
    by_layer = weber_figures.weber_window(fits, x="layer").to_dict()
    assert not of_type(by_layer, "text") and "subtitle" not in by_layer["title"]


def test_numbers_spanning_decades_are_formatted_to_fit_a_cell(result):  # noqa: F811
    table = weber_figures.noise_table(result, "eucl")
    assert list(table.columns[:5]) == ["layer", "model_label", "aicc", "delta_aicc", "weight"]  # what decides, first
    assert not {"formula", "label", "n_points"} & set(table.columns)  # in the label, the index, the magnitudes
    table.loc[0, "weight"] = 1.234e-33  # what a far-behind noise model gets
    assert needs_wide_format(table["weight"]) and not needs_wide_format(table["delta_aicc"].clip(upper=1e3))
    assert max(len(WIDE_FORMAT % value) for value in table["weight"]) <= 10
    assert not needs_wide_format([np.nan, 0.0, 0.5])
