"""Old public names keep working for a while: each warns (DeprecationWarning in Python, a line on
stderr on the command line) and does exactly what its new name does. The rename script
(/work/notes/rename_script.sh in the history of this change) leaves this file alone: it is
about the old names."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import magdash as md
from magdash.cli import main
from tests.support import build_base_store


@pytest.mark.parametrize(("old", "new"), sorted(md._DEPRECATED.items()))
def test_an_old_public_name_warns_and_is_its_new_name(old, new):
    assert new in md.__all__ and old not in md.__all__
    with pytest.warns(DeprecationWarning, match=rf"magdash\.{old} is deprecated; use magdash\.{new}"):
        value = getattr(md, old)
    assert value is getattr(md, new)
    with pytest.warns(DeprecationWarning):  # every use warns, not only the first
        getattr(md, old)


def test_a_new_name_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for new in md._DEPRECATED.values():
            getattr(md, new)


def test_the_old_names_are_the_depth_and_controls_ones():
    # the renames of this release (CHANGELOG): the depth diagnostics' params and result
    assert {"PhaseParams": "DepthParams", "PhaseResult": "DepthResult"}.items() <= md._DEPRECATED.items()
    assert md.DepthParams().n_boot >= 0 and md.DepthResult.__module__.startswith("magdash.")


@pytest.fixture(scope="module")
def base_store(tmp_path_factory) -> Path:
    return build_base_store(tmp_path_factory.mktemp("deprecations") / "store.duckdb")


def test_the_old_subcommand_still_runs_and_warns_on_stderr(base_store, capsys):
    arguments = ["--store", str(base_store), "--model", "base", "--n-boot", "0", "--json"]
    assert main(["depth", *arguments]) == 0
    new = capsys.readouterr()
    assert "deprecated" not in new.err
    assert main(["phase", *arguments]) == 0
    old = capsys.readouterr()
    assert "magdash: warning: `magdash phase` is deprecated and will be removed; use `magdash depth`" in old.err
    assert old.out == new.out  # the same diagnostics, the same JSON
