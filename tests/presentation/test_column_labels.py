"""Column labels have one home (``formatting.COLUMNS``): every table a page shows, its CSV and the
report read it; p-values and shares are told apart by their kind, not by their names.

The pages' tables on a store are checked under AppTest (``tests.support.assert_tables_are_labelled``,
called by every page test); here, the tables those runs do not reach (the tokenization tables, the
massive-dimension control, the Stimuli preview, the Extract page's unfinished extractions, the E5
scatter's CSV), the registry itself and the CSV the download writes."""

from __future__ import annotations

import ast
import io
import re

import numpy as np
import pandas as pd
import pytest

from magdash import dashboard
from magdash.dashboard import stimuli_page as ds
from magdash.formatting import (
    COLUMNS,
    P_FORMAT,
    P_VALUE,
    SHARE,
    column_label,
    format_share,
    is_labelled,
    is_p_column,
    is_share_column,
)
from magdash.presentation import (
    behaviour_figures,
    depth_figures,
    export,
    scaling_figures,
    tokenization_figures,
)
from magdash.presentation.report.html import table_html
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.store import Store
from tests.presentation.test_charts import phase_result, result, tokenized  # noqa: F401  (fixtures)
from tests.support import ROOT

# The table builders the pages pass to ui.table, and where each is checked: "pages" = under
# AppTest on the imported store (tests/app/test_pages.py), "here" = by a test of this module.
TABLE_BUILDERS = {
    "compare_figures.comparison_table": "pages", "scaling_figures.fit_table": "pages", "weber_figures.verdict_table": "pages",
    "weber_figures.noise_table": "pages", "tokenization_figures.strata_table": "here", "tokenization_figures.tokenization_table": "here",
    "tokenization_figures.token_facts_table": "here", "scaling_figures.massive_control_table": "here",
    "controls_figures.controls_verdicts": "pages", "controls_figures.loo_table": "pages", "controls_figures.icc_table": "pages",
    "controls_figures.permutation_table": "pages", "controls_figures.variant_table": "pages",
    "controls_figures.h1_table": "pages", "controls_figures.e6_table": "pages", "controls_figures.ci_width_table": "pages", "controls_figures.design_summary": "pages",
    "depth_figures.jumps_table": "pages", "depth_figures.phase_table": "pages",
    "frequency_figures.frequency_fit_table": "pages", "geometry_figures.geometry_table": "pages",
    "probe_figures.layer_table": "pages", "probe_figures.comparison_table": "pages", "probe_figures.decoded_table": "pages",
    "probe_figures.scores_table": "pages",
    "behaviour_figures.fits_table": "here", "steering_figures.layers_table": "here",
    # frames a page builds before passing them
    "dashboard.inventory_table": "pages", "table": "pages", "pd.DataFrame": "pages",
    "ctx.inventory.incomplete": "here", "preview": "here", "templates.table": "here",
}


def assert_labelled(frame: pd.DataFrame, where: str = "") -> None:
    columns = [str(column) for column in frame.columns]
    assert columns, f"a table without columns checks nothing {where}"
    unlabelled = [column for column in columns if not is_labelled(column)]
    assert not unlabelled, f"columns without a label in formatting.COLUMNS: {unlabelled} {where}"
    headers = [column_label(column) for column in columns]
    assert len(set(headers)) == len(headers), f"two columns read alike: {headers} {where}"


def shown_tables() -> set[str]:
    """The first argument of every ui.table call of the pages, as written."""
    found = set()
    for page in sorted((ROOT / "pages").glob("*.py")):
        for node in ast.walk(ast.parse(page.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "table"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "ui"):
                found.add(ast.unparse(node.args[0].func if isinstance(node.args[0], ast.Call) else node.args[0]))
    return found


def test_every_table_a_page_shows_is_checked_somewhere():
    found = shown_tables()
    assert "probe_figures.scores_table" in found and "depth_figures.jumps_table" in found  # the scan reads the pages
    assert found == set(TABLE_BUILDERS), "a page shows a table this module does not know: label its columns"


def test_the_tokenization_and_massive_dimension_tables_are_labelled(tokenized, result):  # noqa: F811
    for frame in (tokenization_figures.strata_table(tokenized, "eucl"), tokenization_figures.tokenization_table(tokenized, "eucl"),
                  tokenization_figures.token_facts_table(tokenized), scaling_figures.massive_control_table(result, result)):
        assert len(frame)
        assert_labelled(frame)


def test_the_behaviour_fits_table_is_labelled_and_its_weber_fraction_is_not_the_probes():
    from tests.presentation.test_behaviour_figures import Planted

    frame = behaviour_figures.fits_table(Planted(), "t")
    assert len(frame) == 3
    assert_labelled(frame)
    assert column_label("behaviour_wf") != column_label("weber_fraction")  # a probe's is its decoded spread


def test_the_extract_pages_progress_and_the_e5_scatters_csv_are_labelled(tmp_path):
    store = Store(tmp_path / "store.duckdb")
    shape = (len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 3, 4)
    store.import_arrays("m", np.random.default_rng(0).normal(size=shape), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS)
    progress = dashboard.read_inventory(store).progress
    assert len(progress) == 1
    assert_labelled(progress)
    assert column_label("set_name") == "stimulus set"
    assert_labelled(pd.DataFrame(columns=["magnitude", "count", "V"]))  # ff.frequency_scatter_frame's


@pytest.mark.slow  # loads transformers for a tokenizer
def test_the_stimuli_pages_tokenization_preview_is_labelled(tmp_path):
    from transformers import PreTrainedTokenizerFast

    from tests.support import build_tokenizer

    build_tokenizer(tmp_path, 1)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(tmp_path)
    items = ds.preview_items(ds.preview_set(PAPER_CARRIERS[:2], [7, 42]))
    preview = ds.tokenization_preview(tokenizer, items)
    assert len(preview) == 4
    assert_labelled(preview)
    assert column_label("n_number_tokens") == "number length (tokens)"


# -- the registry ----------------------------------------------------------------------------


def test_p_largest_is_a_share_of_resamples_not_a_p_value():
    assert not is_p_column("p_largest") and is_share_column("p_largest")
    assert column_label("p_largest") == "resamples where this step is the largest (%)"
    assert not re.search(r"\bp\b", column_label("p_largest")) and format_share(0.734) == "73.4%"
    # the report writes it as a percentage, a real p in scientific notation beside it
    frame = pd.DataFrame({"jump": [1], "p_largest": [0.0005], "dip_p": [0.0005]})
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", table_html(frame))
    assert cells == ["1", "0.1%", "5.0e-04"]
    assert ">resamples where this step is the largest (%)</th>" in table_html(frame)


def test_the_app_shows_shares_as_percentages_and_p_values_in_scientific_notation():
    from pages.ui.widgets import column_config

    config = column_config(pd.DataFrame({"p_largest": [0.5], "dip_p": [0.01], "jump": [1], "layer": [2]}))
    assert config["p_largest"]["type_config"]["format"] == "percent"
    assert config["p_largest"]["label"] == "resamples where this step is the largest (%)"
    assert config["dip_p"]["type_config"]["format"] == P_FORMAT
    assert config["jump"]["label"] == "step (1 = largest)"
    assert config["layer"]["label"] == "layer"  # its label is its name, configured for its width


def test_a_column_is_as_wide_as_its_header_where_its_values_are_narrower():
    """Streamlit sizes a column to its cells, which cut a longer header ("mean core a"); a column
    whose values are wider keeps Streamlit's own size, and a float column with gaps gets one."""
    from pages.ui.widgets import HEADER_PADDING_PX, HEADER_PX_PER_CHARACTER, column_width

    header = "mean core alpha, CI low"
    wide_enough = len(header) * HEADER_PX_PER_CHARACTER + HEADER_PADDING_PX
    assert column_width(header, pd.Series([-0.0372, 0.0009])) >= wide_enough
    assert column_width("model", pd.Series(["programme (majority of 2 trained models)"])) is None
    assert column_width("R²", pd.Series([0.1, None, 0.3])) is not None
    assert column_width("R²", pd.Series([0.1, 0.3])) is None


def test_every_column_named_like_a_p_value_was_audited():
    """A name that looks like a p (``p``, ``*_p``, ``p_*``) holds a p-value, but for the columns listed
    here, each checked against what it holds (``p_largest``: a share of bootstrap resamples)."""
    looks_like_p = {name for name in COLUMNS if name == "p" or name.endswith("_p") or name.startswith("p_")}
    assert {name for name in looks_like_p if COLUMNS[name].kind != P_VALUE} == {"p_largest"}
    assert {name for name, column in COLUMNS.items() if column.kind == P_VALUE} == looks_like_p - {"p_largest"}
    assert "p_parametric" in looks_like_p and is_p_column("p_permutation")  # permutation p: a p after all
    assert is_p_column("some_new_p") and not is_p_column("rho")  # unlisted columns: by their name


def test_labels_say_what_a_column_is_with_its_unit():
    assert {name: column_label(name) for name in ("width", "n_features", "dim", "n_chars", "n_tokens")} == {
        "width": "width (dimensions)", "n_features": "coordinates read (dimensions)", "dim": "width of the view (dimensions)",
        "n_chars": "number length (characters)", "n_tokens": "number length (tokens)",
    }
    assert column_label("exact") == "probe on every direction (not the top PCs)"
    assert column_label("r2_low_carrier_real") == "R², unseen carriers, CI low"
    shares = {name for name, column in COLUMNS.items() if column.kind == SHARE}
    assert shares >= {"p_largest", "massive_share", "pc1_explained"}
    assert all(column_label(name).endswith("(%)") for name in shares)
    # no label is a machine name: no underscores, no label left empty
    assert not [name for name, column in COLUMNS.items() if "_" in column.header or not column.label.strip()]
    assert column_label("odd_name") == "odd name"


# -- CSV -------------------------------------------------------------------------------------


def test_the_csv_download_has_the_tables_headers_and_its_values_unrounded():
    frame = pd.DataFrame({"series": ["trained"], "jump": [1], "gamma": [0.25], "change": [-0.125],
                          "p_largest": [0.734], "dip_p": [3.25e-7], "width": [576]})
    text = export.table_to_csv(frame).decode("utf-8")
    header = text.splitlines()[0].split(",")
    assert header[:4] + header[5:] == [column_label(column) for column in frame.drop(columns="p_largest").columns]
    # The CSV keeps a share between 0 and 1, so its header must not say "%".
    assert header[4] == "resamples where this step is the largest (0 to 1)" and header[6] == "width (dimensions)"
    back = pd.read_csv(io.StringIO(text))
    assert back.iloc[0].tolist() == ["trained", 1, 0.25, -0.125, 0.734, 3.25e-7, 576]
    assert list(frame.columns)[4] == "p_largest"  # the frame itself keeps its machine names


def test_a_depth_table_built_from_a_result_downloads_with_labels(phase_result):  # noqa: F811
    table = depth_figures.jumps_table({"trained": phase_result})
    assert "jump" in table.columns and "rank" not in table.columns  # not the covariance rank of phase_table
    assert_labelled(table)
    header = export.table_to_csv(table).decode("utf-8").splitlines()[0]
    assert "resamples where this step is the largest (0 to 1)" in header and "p_largest" not in header
    assert_labelled(depth_figures.phase_table({"trained": phase_result}))



def test_the_reports_tables_are_labelled(result, tokenized, phase_result):  # noqa: F811
    from magdash.presentation.report import sections as rs

    built = [*rs.analysis_sections({"m": result, "t": tokenized}), rs.tokenization_section({"t": tokenized}, "eucl"),
             rs.massive_section(result, result, "eucl"),
             rs.depth_section({"trained": phase_result}, {"trained": phase_result}, 1, "block 1")]
    frames = {caption: frame for section in built for caption, frame in section.tables}
    assert len(frames) >= 10 and any("largest steps" in caption for caption in frames)
    for caption, frame in frames.items():
        assert_labelled(frame, caption)


def test_the_uploaded_comparison_templates_table_is_labelled():
    from magdash.dashboard.stimuli_page import read_template_upload

    templates = read_template_upload("mine.csv", b"name,template\nplain,Is {a} or {b} larger? A or B.\n")
    assert templates.ok
    assert_labelled(templates.table(), "(the Stimuli page's comparison templates)")


def test_the_steering_layers_table_is_labelled():
    from magdash.presentation import steering_figures
    from magdash.steering.steer_params import SteerParams
    from magdash.steering.steer_result import summarise_steering
    from tests.steering.test_summary import KINDS, planted_frames

    steered, baseline = planted_frames(n_trials=40)
    steering = summarise_steering(steered, baseline, KINDS, SteerParams(n_boot=0), dose_units={0: 1.0, 1: 2.0},
                                top_shares={0: 0.1, 1: 0.2})
    frame = steering_figures.layers_table(steering)
    assert frame["layer"].tolist() == [0, 1] and list(frame.columns) == steering_figures.LAYER_TABLE_COLUMNS
    assert_labelled(frame)
