"""Export (magdash.presentation.report): PNG/SVG/CSV bytes, offline conversion, and the HTML report's
escaping, self-containment and embedded manifest."""

from __future__ import annotations

import json
import struct
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from io import StringIO

import altair as alt
import numpy as np
import pandas as pd
import pytest

from magdash import reports
from magdash.errors import AnalysisError
from magdash.formatting import MISSING
from magdash.jsonio import to_jsonable
from magdash.presentation import export, report
from magdash.presentation import variability_figures as vf
from magdash.variability.analysis_params import AnalysisParams

HOSTILE = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAGNITUDES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 200, 300, 500, 700, 1000]


def small_chart(title: str = "a chart", width: int | str = 300) -> alt.LayerChart:
    fits = pd.DataFrame(
        {
            "measure": "eucl",
            "layer": [0, 1, 2, 3],
            "label": ["embeddings", "block 1", "block 2", "block 3"],
            "core": [False, False, True, True],
            "alpha": [np.nan, -0.05, -0.04, -0.02],
            "ci_low": [np.nan, np.nan, -0.06, -0.03],
            "ci_high": [np.nan, np.nan, -0.02, -0.01],
        }
    )
    return vf.alpha_profile(fits, title=title, width=width, height=200)


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the PNG IHDR chunk."""
    return struct.unpack(">II", data[16:24])


# -- single exports --------------------------------------------------------------------------


@pytest.mark.slow
def test_png_has_the_signature_a_plausible_size_and_scales():
    chart = small_chart()
    two = export.chart_to_png(chart)
    assert two.startswith(PNG_SIGNATURE)
    assert 5_000 < len(two) < 5_000_000
    one = export.chart_to_png(chart, scale=1)
    width_two, height_two = png_size(two)
    width_one, height_one = png_size(one)
    assert width_one >= 300 and width_two == pytest.approx(2 * width_one, abs=2)
    assert height_two == pytest.approx(2 * height_one, abs=2)
    with pytest.raises(AnalysisError, match="scale must be positive"):
        export.chart_to_png(chart, scale=0)


def test_svg_parses_as_xml_and_keeps_hostile_text_as_text():
    svg = export.chart_to_svg(small_chart(title=HOSTILE))
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    assert HOSTILE not in svg
    texts = ["".join(element.itertext()) for element in root.iter() if element.tag.endswith("text")]
    assert HOSTILE in texts


@pytest.mark.slow
def test_container_width_is_fixed_for_export():
    spec = export.chart_spec(small_chart(width="container"))
    assert spec["width"] == export.EXPORT_WIDTH
    stacked = alt.vconcat(small_chart(width="container"), small_chart("another", width="container"))
    nested = export.chart_spec(stacked)
    assert [panel["width"] for panel in nested["vconcat"]] == [export.EXPORT_WIDTH] * 2
    root = ET.fromstring(export.chart_to_svg(stacked))
    assert float(root.get("width")) > export.EXPORT_WIDTH


def test_conversion_never_fetches_external_data():
    chart = alt.Chart("https://example.invalid/data.csv").mark_point().encode(x="a:Q")
    with pytest.raises(AnalysisError, match="not allowed"):
        export.chart_to_svg(chart)
    with pytest.raises(AnalysisError, match="not allowed"):
        export.chart_to_png(chart)


def test_table_to_csv_round_trips_text_and_missing_values():
    frame = pd.DataFrame({"model": [HOSTILE, "alpha α, \"quoted\""], "alpha": [-0.05, np.nan], "n": [16, 0]})
    data = export.table_to_csv(frame)
    assert data.decode("utf-8").splitlines()[0] == "model,alpha,magnitudes correlated"  # the tables' headers
    back = pd.read_csv(StringIO(data.decode("utf-8")))
    assert back["model"].tolist() == frame["model"].tolist()
    assert back["alpha"].iloc[0] == -0.05 and np.isnan(back["alpha"].iloc[1])
    assert back["magnitudes correlated"].tolist() == [16, 0]


def test_table_to_csv_keeps_spreadsheets_from_running_user_text_as_formulas():
    """A carrier, model or source name beginning with = + - @, a tab or CR is written after a ' (OWASP);
    numbers, and text that is a plain number, are written as they are."""
    import csv

    hostile = ["=HYPERLINK(\"http://x.invalid\",\"click\")", "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\r=1+1"]
    frame = pd.DataFrame({
        "model": [*hostile, "plain {n}\r=2+2", "-0.5"],
        "alpha": [-0.5, -1e-3, 0.0, 2.0, -7.0, 1.0, np.nan, 3.0],
        "=cmd|' /C calc'!A0": ["x"] * 8,  # a column named by user text (a pivoted model name)
    })
    rows = list(csv.reader(StringIO(export.table_to_csv(frame).decode("utf-8"), newline="")))
    assert rows[0] == ["model", "alpha", "'=cmd|' /C calc'!A0"]
    # a CR inside a cell stays in it (quoted), never starting a row of its own
    assert [row[0] for row in rows[1:]] == [*("'" + text for text in hostile), "plain {n}\r=2+2", "-0.5"]
    assert [row[1] for row in rows[1:]] == ["-0.5", "-0.001", "0.0", "2.0", "-7.0", "1.0", "", "3.0"]
    assert frame["model"].iloc[0].startswith("=")  # the table shown keeps its text


def test_safe_filename():
    assert export.safe_filename(HOSTILE) == "script_alert_1_script"
    assert export.safe_filename("meta-llama/Meta-Llama-3-8B@random") == "meta-llama_Meta-Llama-3-8B_random"
    assert export.safe_filename("../..") == "magdash"


# -- the HTML document -------------------------------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _parse(document: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(document)
    return parser.tags


def _manifest(name: str = HOSTILE) -> dict:
    return {
        "generated_at": "2026-04-01T00:00:00+00:00",
        "models": [{"name": name, "model_id": "abc", "n_blocks": 3, "hidden_size": 8, "score": float("nan")}],
        "note": "</script><script>alert(2)</script> & more",
    }


def test_report_html_escapes_user_text_everywhere():
    sections = [
        report.ReportSection(
            f"Scaling: {HOSTILE}",
            text=[f"model {HOSTILE} & friends"],
            figures=[(f"figure {HOSTILE}", small_chart(title=HOSTILE))],
            tables=[(f"table {HOSTILE}", pd.DataFrame({HOSTILE: [HOSTILE], "alpha": [np.nan], "ok": [True]}))],
        ),
        report.ReportSection("Verdicts", tables=[("H1", pd.DataFrame({"model": ["a"], "H1": [False]}))]),
    ]
    document = report.build_report_html(sections, _manifest(), title=f"report {HOSTILE}")
    assert HOSTILE not in document
    assert "<script>alert(2)" not in document
    for title in (f"Scaling: {ESCAPED}", "Verdicts", "Run manifest"):
        assert f">{title}</h2>" in document
    assert f"<td class=\"text\">{ESCAPED}</td>" in document
    assert f"<th>{ESCAPED}</th>" in document
    assert f'<td class="na">{MISSING}</td>' in document and '<td class="text">yes</td>' in document
    tags = _parse(document)
    scripts = [attrs for tag, attrs in tags if tag == "script"]
    assert scripts == [{"type": "application/json", "id": "magdash-manifest"}]
    images = [attrs["src"] for tag, attrs in tags if tag == "img"]
    assert len(images) == 1 and images[0].startswith("data:image/svg+xml;base64,")
    assert all(tag not in ("link", "iframe", "object", "embed") for tag, _ in tags)
    assert "http://" not in document.split("<body>")[0] and 'src="http' not in document
    csp = [attrs["content"] for tag, attrs in tags if tag == "meta" and attrs.get("http-equiv")]
    assert csp == ["default-src 'none'; img-src data:; style-src 'unsafe-inline'"]


def test_report_manifest_is_embedded_and_parseable():
    manifest = _manifest()
    document = report.build_report_html([], manifest)
    block = document.split('id="magdash-manifest">')[1].split("</script>")[0]
    assert "<" not in block and ">" not in block and "&" not in block
    assert report.extract_manifest(document) == to_jsonable(manifest)
    assert report.extract_manifest(document)["models"][0]["score"] is None
    with pytest.raises(AnalysisError, match="no magdash manifest"):
        report.extract_manifest("<html></html>")


def test_report_figures_as_png_and_bad_format():
    section = report.ReportSection("One", figures=[("png figure", small_chart())])
    document = report.build_report_html([section], {}, image_format="png")
    images = [attrs["src"] for tag, attrs in _parse(document) if tag == "img"]
    assert len(images) == 1 and images[0].startswith("data:image/png;base64,")
    with pytest.raises(AnalysisError, match="image format"):
        report.build_report_html([section], {}, image_format="gif")


# -- the full report from a store ----------------------------------------------------------------


def _import(store, name: str, n_blocks: int, stimuli: str, seed: int, sentence: str = "Sentence") -> None:
    rng = np.random.default_rng(seed)
    n_layers = n_blocks + 2
    per_carrier = rng.normal(size=(len(MAGNITUDES), 4, n_layers, 8)).astype(np.float32)
    per_carrier[:, :, 0, :] = per_carrier[:, :1, 0, :]  # context-free embeddings: V = 0
    labels = ["embeddings", *(f"block {i}" for i in range(1, n_blocks + 1)), "post-norm"]
    carriers = [f"{sentence} {i} has {{n}} in it." for i in range(4)]
    store.import_arrays(name, per_carrier, MAGNITUDES, carriers=carriers, layer_labels=labels, stimuli=stimuli)


@pytest.mark.slow  # renders every figure to an image; the fast loop draws the same figures through the pages
def test_build_report_from_a_store(store):
    _import(store, HOSTILE, 4, "grid", 1)
    _import(store, "plain", 6, "grid", 2)
    _import(store, "elsewhere", 4, "other-grid", 3, sentence="Line")
    steps = []
    params = AnalysisParams(n_boot=50)
    document = reports.analysis_report(
        store,
        [HOSTILE, "plain", "elsewhere"],
        params=params,
        extra_sections=[report.ReportSection("Depth diagnostics", text=["added by the caller"])],
        progress=steps.append,
    )
    assert HOSTILE not in document
    for title in (
        "Verdicts (H1-H4)",
        f"Scaling: {ESCAPED}",
        "Scaling: plain",
        "Scaling: elsewhere",
        "Weber window and coefficient of variation",
        "Noise models (AICc)",
        "E3 boundary sensitivity",
        "E4 axis specificity",
        "Geometry (RSA and PC1)",
        f"Comparison: {ESCAPED} vs plain",
        "Comparisons not made",
        "Depth diagnostics",
        "Run manifest",
    ):
        assert f">{title}</h2>" in document, title
    assert "share no complete stimulus set" in document
    assert "programme (majority of 3 trained models)" in document
    assert "stimulus bootstrap" in document and "cannot reach 0.05" in document  # the comparison's sentence
    manifest = report.extract_manifest(document)
    assert [m["name"] for m in manifest["models"]] == [HOSTILE, "plain", "elsewhere"]
    identity = store.model_record("plain")
    plain = manifest["models"][1]
    assert plain["fingerprint"] == identity.fingerprint and plain["n_blocks"] == 6
    assert plain["data_fingerprint"] == store.data_fingerprint("plain", "grid")
    assert plain["core_layers"] == [3, 4, 5]
    assert manifest["stimuli"]["grid"]["magnitudes"] == MAGNITUDES
    assert manifest["stimuli"]["grid"]["carriers"][0] == "Sentence 0 has {n} in it."
    assert manifest["analysis_parameters"]["n_boot"] == 50
    assert {"numpy", "altair", "vl-convert-python", "python"} <= set(manifest["packages"])
    json.dumps(manifest, allow_nan=False)  # strictly valid JSON
    assert steps[0] == f"analysing {HOSTILE}" and any(s.startswith("rendering") for s in steps)
    images = [attrs["src"] for tag, attrs in _parse(document) if tag == "img"]
    assert len(images) >= 15 and all(src.startswith("data:image/svg+xml;base64,") for src in images)
    with pytest.raises(AnalysisError, match="at least one model"):
        reports.analysis_report(store, [])
