"""The typed chart helpers of magdash.presentation.chart_style write the Vega-Lite specs that
altair's own (loosely typed) calls write, so typing them changed no chart."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from magdash.presentation import chart_style as style


def _two_charts() -> tuple[alt.Chart, alt.Chart]:
    data = style.inline_data(pd.DataFrame({"layer": [0, 1, 2], "alpha": [0.5, np.nan, 1.5]}))
    line = alt.Chart(data).mark_line().encode(x="layer:Q", y="alpha:Q")
    points = alt.Chart(data).mark_point().encode(x="layer:Q", y="alpha:Q")
    return line, points


def test_layered_writes_the_spec_of_alt_layer():
    line, points = _two_charts()
    chart = style.layered(line, points)
    assert isinstance(chart, alt.LayerChart)
    assert chart.to_dict() == alt.layer(line, points).to_dict()
    assert len(chart.to_dict()["layer"]) == 2


def test_finish_keeps_the_chart_type_and_sets_the_properties():
    line, points = _two_charts()
    chart = style.finish(style.layered(line, points), style.chart_title("alpha", None), 300, 200)
    assert isinstance(chart, alt.LayerChart)
    spec = chart.to_dict()
    assert (spec["width"], spec["height"]) == (300, 200)
    assert spec["title"]["text"] == "alpha"


def test_solid_legend_sets_the_legend_as_attribute_assignment_did():
    channel = alt.Color("model:N", scale=alt.Scale(range=["#000000"]))
    expected = channel.copy(deep=True)
    expected.legend = alt.Legend(symbolType="circle", symbolOpacity=1.0, labelLimit=style.LEGEND_LABEL_LIMIT)
    solid = style.solid_legend(channel)
    assert solid.to_dict() == expected.to_dict()
    assert "legend" not in channel.to_dict()  # the given channel is not changed


def test_profile_layers_name_a_y_scale_only_when_given():
    frame = pd.DataFrame({"layer": [0, 1], "alpha": [1.0, 2.0], "low": [0.5, 1.5], "high": [1.5, 2.5]})
    common = dict(x=alt.X("layer:Q"), y_field="alpha", y_title="alpha", color=alt.value("black"), tooltip=[],
                  band=("low", "high"))
    plain = style.profile_layers(frame, **common)
    assert all("scale" not in layer.to_dict()["encoding"]["y"] for layer in plain)
    scaled = style.profile_layers(frame, **common, y_scale=alt.Scale(type="log"))
    assert all(layer.to_dict()["encoding"]["y"]["scale"] == {"type": "log"} for layer in scaled)


def test_bands_take_arrays_and_sequences_alike():
    axis = style.DepthAxis.of(range(6), "layer", "layer")
    positions = [1.0, 2.0, 4.0]
    from_list = style.core_band(axis, positions).to_dict()
    from_array = style.core_band(axis, np.asarray(positions)).to_dict()
    assert from_list == from_array
    frame = axis.bands(np.asarray(positions))
    np.testing.assert_allclose(frame["layer_low"], [0.5, 1.5, 3.5])
    np.testing.assert_allclose(frame["layer_high"], [1.5, 2.5, 4.5])
    no_fit = style.no_fit_band(axis, np.asarray([3.0]))
    assert isinstance(no_fit, alt.LayerChart) and len(no_fit.to_dict()["layer"]) == 2
