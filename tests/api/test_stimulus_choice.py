"""Which stimulus set an analysis uses when none is named: one rule (``default_stimulus_set``)
for analyze, compare and every other entry point; the Python message names the parameter
(``stimuli=``), the CLI's its option (``--stimuli``); the README's Python runs on a store in use
(a second set uploaded beside the paper's) and prints alpha with its interval."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import magdash as md
from magdash.cli import main
from magdash.cli.common import command_line_message
from magdash.errors import AnalysisError, StoreError
from magdash.stimuli import default_stimulus_set
from tests.support import ROOT, build_tiny_model

README = ROOT / "README.md"
OTHER_CARRIERS = ("I saw {n} birds.", "She paid {n} coins.", "{n} people came.")  # none of the paper's


@pytest.fixture(scope="module")
def in_use(tmp_path_factory, tiny_llama, tiny_mistral) -> Path:
    """A store in use: 'minilm' on the paper's set and on an uploaded one, 'other' on the paper's
    set only, 'lone' on two uploaded sets and no paper's set (tiny models standing in)."""
    lone = build_tiny_model(tmp_path_factory.mktemp("models") / "lone", "llama", n_blocks=2)
    path = tmp_path_factory.mktemp("in-use") / "cache" / "magdash.duckdb"
    path.parent.mkdir()
    store = md.Store(path)
    small = md.StimulusSet("xss-set", OTHER_CARRIERS, tuple(range(1, 9)))
    newcomer = md.StimulusSet("newcomer-5", OTHER_CARRIERS[:2], tuple(range(10, 90, 10)))
    for name, model, sets in (("minilm", tiny_llama, ("paper", small)), ("other", tiny_mistral, ("paper",)),
                              ("lone", lone, (small, newcomer))):
        for stimuli in sets:
            md.extract(str(model), store=store, stimuli=stimuli, name=name, device="cpu")
    assert store.stimulus_sets_for("minilm") == ["paper", "xss-set"]
    return path


def test_the_default_set_is_the_papers_when_held_else_the_only_one():
    assert default_stimulus_set(["a", "paper", "z"]) == "paper"
    assert default_stimulus_set(["mine"]) == "mine"
    assert default_stimulus_set(["a", "b"]) is None
    assert default_stimulus_set([]) is None


def test_analyze_and_compare_choose_by_the_same_rule(in_use):
    store = md.Store(in_use)
    assert md.analyze(store, "minilm", n_boot=0).stimuli == "paper"
    assert md.compare(store, "minilm", "other", n_boot=0).stimuli == "paper"
    assert store.resolve_stimuli("minilm", None) == "paper"


def test_the_python_message_names_the_parameter(in_use):
    store = md.Store(in_use)
    with pytest.raises(StoreError) as caught:
        md.analyze(store, "lone", n_boot=0)
    message = str(caught.value)
    assert "several stimulus sets (newcomer-5, xss-set)" in message
    assert "stimuli=" in message and "--stimuli" not in message
    with pytest.raises(AnalysisError) as caught:
        md.compare(store, "lone", "lone", n_boot=0)  # shares both sets with itself
    assert "stimuli=" in str(caught.value) and "--stimuli" not in str(caught.value)


def test_the_command_line_names_the_option(in_use, capsys):
    assert main(["analyze", "--model", "lone", "--store", str(in_use), "--n-boot", "0"]) == 2
    error = capsys.readouterr().err
    assert "choose one with --stimuli" in error and "stimuli=" not in error
    assert main(["analyze", "--model", "lone", "--stimuli", "xss-set", "--store", str(in_use), "--n-boot", "0"]) == 0


def test_the_command_line_writes_each_named_parameter_as_its_option():
    error = StoreError("pick one: stimuli='a b', or n_boot=5; stimuli= alone", parameters=("stimuli", "n_boot"))
    assert command_line_message(error) == "pick one: --stimuli a b, or --n-boot 5; --stimuli alone"
    # an option's parameter is written as the option even where the message does not list it (a
    # warning lists none); a word that no option sets stays as it is unless the message lists it
    assert command_line_message(StoreError("stimuli= unlisted")) == "--stimuli unlisted"
    assert command_line_message(StoreError("frobnicate=3 unlisted")) == "frobnicate=3 unlisted"
    assert command_line_message(StoreError("frobnicate=3", parameters=("frobnicate",))) == "--frobnicate 3"


def _readme_python() -> str:
    (block,) = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    return block


def test_the_readme_python_runs_on_a_store_holding_two_sets_and_shows_alpha(in_use, monkeypatch, capsys):
    code = _readme_python()
    assert 'stimuli="paper"' in code  # the README shows the parameter
    extracted = []
    monkeypatch.setattr(md, "extract", lambda model, **kwargs: extracted.append(model))  # stored already
    monkeypatch.chdir(in_use.parent.parent)
    with pd.option_context("display.max_columns", 0, "display.width", 80):  # a terminal 80 columns wide
        exec(compile(code, "README.md", "exec"), {})
    assert extracted == ["minilm"]
    header = capsys.readouterr().out.splitlines()[0].split()
    assert header[:3] == ["measure", "layer", "alpha"] and header[-2:] == ["ci_low", "ci_high"]
    assert "..." in header  # the middle elided, not alpha or its interval


def test_the_readme_shows_the_option_on_the_command_line():
    text = README.read_text(encoding="utf-8")
    assert "python -m magdash analyze --model minilm --stimuli paper" in text
