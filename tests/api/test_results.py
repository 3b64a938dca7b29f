"""What a notebook shows of each result: a readable summary (``_repr_html_``), its tables as
DataFrames, and the charts the app draws (``magdash.charts`` hands out the pages' own figures)."""

from __future__ import annotations

import html
import re

import altair as alt
import numpy as np
import pandas as pd
import pytest

import magdash as md
from magdash.presentation import compare_figures, depth_figures, scaling_figures, weber_figures
from magdash.presentation import controls_figures as cf
from magdash.presentation import frequency_figures as ff
from magdash.presentation import geometry_figures as gf
from magdash.variability.html_summary import MAX_ROWS, html_table

MAGNITUDES = tuple(range(1, 13))
CARRIERS = ("There are {n} apples.", "I counted {n} birds.", "The box holds {n} coins.")
FAST = md.AnalysisParams(n_boot=50, seed=1)


def planted(seed: int, alpha: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = np.asarray(MAGNITUDES, dtype=np.float64)
    centroids = np.log(n)[:, None, None, None] * rng.normal(size=(1, 1, 5, 16))
    return (centroids + rng.normal(size=(12, 3, 5, 16)) * (n**alpha)[:, None, None, None]).astype(np.float32)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    store = md.Store(tmp_path_factory.mktemp("results") / "store.duckdb")
    model = md.Activations(planted(1, 0.5), MAGNITUDES, carriers=CARRIERS, name="<b>model</b>")
    control = md.Activations(planted(2, 0.0), MAGNITUDES, carriers=CARRIERS, name="m@random")
    store.put("m", model)
    store.put("m@random", control)
    counts = pd.DataFrame({"number": np.arange(1, 20, dtype=np.int64), "count": np.arange(400, 20, -20, dtype=np.int64)})
    source = md.FrequencySource("planted", counts, {})
    analysis = md.analyze(model, params=FAST)
    return {
        "store": store, "model": model, "source": source,
        "analysis": analysis,
        "stored": md.analyze(store, "m", params=FAST),
        "comparison": md.compare(store, "m", "m@random", params=FAST),
        "controls": md.controls(store, "m", params=md.ControlsParams(analysis=FAST, n_perm=100)),
        "design": md.design(model, params=md.DesignParams(n_studies=20, n_points=2, n_boot=0, carrier_grid=(3,),
                                                          magnitude_grid=(8,))),
        "depth": md.depth(model, n_boot=30),
        "control_depth": md.depth(control, n_boot=30),
        "e5": md.e5(model, source=source, n_boot=50),
    }


def test_an_analysis_summarises_what_a_reader_checks_first(results):
    result = results["analysis"]
    shown = result._repr_html_()
    assert "Scalar variability of &lt;b&gt;model&lt;/b&gt;" in shown and "<b>model</b>" not in shown
    assert "core band: 2-3" in shown and "12 magnitudes (1..12) x 3 carriers" in shown
    for column in ("H1: alpha > 0", "H2: alpha in the Weber window", "H3: alpha < 1", "H4: alpha changes with depth",
                   "mean core alpha", "CI low", "R²"):
        assert f"<th>{html.escape(column)}</th>" in shown
    # The first measure's core fits, written as the CLI writes numbers.
    alpha = result.fit("eucl", 2).alpha
    assert f"<td>{alpha:.4g}</td>" in shown
    table = result.hypothesis_table()
    assert list(table["measure"]) == ["V_eucl", "V_residual", "V_proj"]
    assert table.loc[0, "mean_alpha"] == pytest.approx(result.hypotheses["eucl"].mean_alpha)
    assert bool(table.loc[0, "H1"]) is result.hypotheses["eucl"].h1 is True  # planted alpha 0.5
    # the stimulus bootstrap's interval leads; H4 over the 2 core layers cannot reach .05, and the table says so
    assert table.loc[0, "mean_alpha_ci_low"] < table.loc[0, "mean_alpha"] < table.loc[0, "mean_alpha_ci_high"]
    assert table.loc[0, "note"].startswith("with 2 layers the smallest p this test can give is 1")
    assert "<th>mean alpha CI low (stimuli)</th>" in shown


def test_every_result_shows_a_summary_and_its_tables(results):
    comparison, controls = results["comparison"], results["controls"]
    assert "m minus m@random" in comparison._repr_html_() and "<th>Wilcoxon p (layers)</th>" in comparison._repr_html_() and "stimulus CI low" in comparison._repr_html_()
    assert list(comparison.table.columns[:3]) == ["measure", "layer_a", "layer_b"]
    assert len(comparison.table) == 3 * 5 and set(comparison.table["measure"]) == set(FAST.measures)
    shown = controls._repr_html_()
    assert "Robustness controls of m" in shown and "compared with: m@random" in shown
    assert all(word in shown for word in ("carriers", "permutation", "random")) and "<td>ok</td>" in shown
    design = results["design"]._repr_html_()
    assert "Study design" in design and "power of H1" in design and "calibrated on" in design
    depth = results["depth"]
    assert "gamma_c of the order parameter" in depth._repr_html_()
    assert list(depth.table["layer"]) == [0, 1, 2, 3, 4] and "effective_rank" in depth.table


def test_a_long_table_is_cut_and_says_so():
    frame = pd.DataFrame({"layer": range(30), "p": [1e-5] * 30, "alpha": [np.nan] * 30, "core": [True] * 30})
    shown = html_table(frame)
    assert shown.count("<tr>") == MAX_ROWS + 1 and f"… {30 - MAX_ROWS} more rows" in shown
    assert "<td>1.0e-05</td>" in shown and "<td>—</td>" in shown and "<td>yes</td>" in shown


def same_chart(ours, theirs) -> None:
    assert isinstance(ours, alt.TopLevelMixin)
    assert ours.to_dict() == theirs.to_dict()


@pytest.mark.slow
def test_the_charts_are_the_pages_own_figures(results):
    store, analysis, stored = results["store"], results["analysis"], results["stored"]
    layer = analysis.core_layers[-1]
    vectors = results["model"].layer(layer)
    same_chart(md.charts.scaling(analysis, layer=layer, data=results["model"]),
               scaling_figures.scaling_figure(analysis, "eucl", layer, vectors))
    same_chart(md.charts.scaling(stored, layer=layer, data=store), scaling_figures.scaling_figure(stored, "eucl", layer, vectors))
    same_chart(md.charts.scaling(analysis, "proj", layer, data=results["model"]),
               scaling_figures.scaling_figure(analysis, "proj", layer))
    same_chart(md.charts.profile(analysis), scaling_figures.profile_figure(analysis, "eucl"))
    same_chart(md.charts.weber(analysis, stored), weber_figures.weber_figure({"<b>model</b>": analysis, "m": stored}, "eucl"))
    same_chart(md.charts.cv(analysis), weber_figures.cv_figure(analysis))
    same_chart(md.charts.noise(analysis, "residual"), weber_figures.noise_figure(analysis, "residual"))
    same_chart(md.charts.e3(analysis), weber_figures.e3_figure(analysis))
    same_chart(md.charts.e4(analysis), weber_figures.e4_figure(analysis))
    same_chart(md.charts.comparison(results["comparison"]), compare_figures.compare_figure(results["comparison"], "eucl"))
    same_chart(md.charts.rsa(analysis), gf.rsa_figure(analysis, "euclidean"))
    same_chart(md.charts.rdm(stored, layer, store, "cosine"), gf.rdm_figure(stored, vectors, layer, "cosine"))
    same_chart(md.charts.pc1(analysis, layer, vectors), gf.pc1_figure(analysis, vectors, layer))
    controls = results["controls"]
    same_chart(md.charts.loo(controls), cf.loo_figure(controls, "eucl"))
    same_chart(md.charts.icc(controls), cf.icc_figure(controls))
    same_chart(md.charts.permutation(controls), cf.permutation_figure(controls, "eucl"))
    same_chart(md.charts.variant(controls), cf.variant_figure(controls, "m@random", "eucl"))
    design = results["design"]
    same_chart(md.charts.h1_power(design), cf.h1_figure(design))
    same_chart(md.charts.e6_power(design), cf.e6_figure(design))
    same_chart(md.charts.ci_width(design), cf.ci_width_figure(design))
    series = {"trained": results["depth"], "random control": results["control_depth"]}
    same_chart(md.charts.order(results["depth"], results["control_depth"]), depth_figures.order_figure(series))
    same_chart(md.charts.omega(results["depth"], results["control_depth"]), depth_figures.omega_figure(series))
    same_chart(md.charts.spectrum(results["depth"], 2, results["control_depth"]), depth_figures.spectrum_figure(series, 2))
    same_chart(md.charts.rank(results["depth"], results["control_depth"]), depth_figures.rank_figure(series))
    same_chart(md.charts.e5(results["e5"]), ff.frequency_rho_figure(results["e5"]))
    same_chart(md.charts.frequency_counts(results["source"]), ff.frequency_counts_figure(results["source"]))
    frame = ff.frequency_scatter_frame(analysis, results["source"], "eucl", 3)
    same_chart(md.charts.frequency(analysis, results["source"], results["e5"], 3),
               ff.frequency_scatter_figure(frame, results["e5"], 3, analysis.layer_labels[3]))


def test_a_chart_renders_to_svg(results):
    svg = md.charts.profile(results["analysis"]).properties(width=400).to_json()
    assert re.search(r'"mark": \{[^}]*"type": "line"', svg) or '"line"' in svg
    import vl_convert

    rendered = vl_convert.vegalite_to_svg(md.charts.scaling(results["analysis"]).properties(width=400).to_dict())
    assert rendered.startswith("<svg") and "<path" in rendered
