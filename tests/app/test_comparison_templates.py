"""The Stimuli page's comparison-template upload under AppTest: a file of templates is parsed
(:func:`magdash.comparison_stimuli.parse_templates`), listed with what may give the answer away
(:func:`~magdash.comparison_stimuli.template_caveats`) and saved as a comparison set that
``magdash behave --comparisons NAME`` runs; a template without ``{b}`` is refused with its line and
nothing is stored."""

from __future__ import annotations

import numpy as np
import pytest

from magdash.comparison_stimuli import PAPER_REFERENCES
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.store import Store
from tests.support import assert_tables_are_labelled, open_app, shown, widget

PAGE = "pages/stimuli.py"
GOOD = (b"name,template\n"
        b"plain,Which is larger: A) {a} or B) {b}? Answer with only A or B.\n"
        b"leaky,\"Which is larger: A) {a} or B) {b}? The answer is B. Answer with only A or B.\"\n")


@pytest.fixture
def store_path(tmp_path) -> str:
    store = Store(tmp_path / "store.duckdb")
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 2, 4)).astype(np.float32)
    store.import_arrays("planted", vectors, PAPER_MAGNITUDES, carriers=PAPER_CARRIERS, stimuli="paper")
    return str(store.path)


def _upload(at, filename: str, data: bytes):
    widget(at.file_uploader, "Template file").set_value((filename, data, "text/plain")).run()
    assert not at.exception, [e.message[:300] for e in at.exception]
    return at


def test_uploaded_templates_are_listed_with_their_caveats_and_saved_as_a_comparison_set(store_path, monkeypatch):
    at = _upload(open_app(store_path, monkeypatch, page=PAGE), "mine.csv", GOOD)
    # no problem with the file: the only error box is the leak's
    assert [shown(error) for error in at.main.error if "states an answer" not in shown(error)] == []
    table = at.dataframe[-1].value
    assert list(table["template_name"]) == ["plain", "leaky"]
    assert_tables_are_labelled(at)
    assert table["template"].iloc[0] == "Which is larger: A) {a} or B) {b}? Answer with only A or B."
    # the template that states an answer is named where it is listed (serious: an error box)
    leaks = [shown(box) for box in [*at.main.error, *at.main.warning] if "states an answer" in shown(box)]
    assert len(leaks) == 1 and "'leaky'" in leaks[0] and "(B)" in leaks[0]
    widget(at.text_input, "Comparison set name").set_value("mine").run()
    widget(at.button, "Save comparison set").click().run()
    assert not at.exception and any("Saved 'mine'" in shown(box) for box in at.success)
    saved = Store(store_path).comparison_set("mine")
    assert saved is not None and [template.name for template in saved.templates] == ["plain", "leaky"]
    assert saved.references == PAPER_REFERENCES and saved.chat_template
    assert saved.n_trials == len(PAPER_REFERENCES) * 6 * 2 * 2


def test_a_template_without_b_is_refused_with_its_line_and_nothing_is_saved(store_path, monkeypatch):
    at = _upload(open_app(store_path, monkeypatch, page=PAGE), "mine.txt",
                 b"Which is larger: A) {a} or B) {b}?\nWhich is larger: A) {a} or B)?\n")
    errors = [shown(error) for error in at.main.error]
    assert len(errors) == 1 and "line 2 has no {b}" in errors[0] and "Template file" in errors[0]
    assert not [button for button in at.button if button.label == "Save comparison set"]
    assert Store(store_path).comparison_sets().empty


def test_the_paper_design_name_is_kept_for_the_paper_design(store_path, monkeypatch):
    at = _upload(open_app(store_path, monkeypatch, page=PAGE), "mine.txt", b"Is {a} or {b} larger? A or B.\n")
    widget(at.text_input, "Comparison set name").set_value("paper").run()
    widget(at.button, "Save comparison set").click().run()
    assert any("belongs to the paper's design" in shown(error) for error in at.main.error)
    assert Store(store_path).comparison_sets().empty
