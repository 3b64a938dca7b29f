"""The pages' figure lists (magdash.presentation.page_figures) against what the pages draw and what
the report draws: each page's ``ui.figure`` calls name its declared figures in order, and the
report's sections draw exactly the figures the pages mark for the report."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from magdash.dashboard.navigation import PAGES
from magdash.errors import AnalysisError
from magdash.presentation import page_figures
from magdash.presentation.page_figures import PAGE_FIGURES, When
from magdash.presentation.report import sections

ROOT = Path(__file__).resolve().parents[2]


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Name in the module -> the module it stands for (``from magdash.presentation import x as y``)."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def _named(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """``module:function`` of ``alias.function``, or None for anything else."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
        return f"{aliases[node.value.id]}:{node.attr}"
    return None


def drawn_by_page(path: Path) -> list[str]:
    """The figure functions a page script passes to ``ui.figure``, in the order of the script."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = _aliases(tree)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and node.func.attr == "figure"
             and isinstance(node.func.value, ast.Name) and node.func.value.id == "ui"]
    calls.sort(key=lambda node: (node.lineno, node.col_offset))
    return [_named(call.args[0], aliases) or ast.unparse(call.args[0]) for call in calls]


def drawn_by_report() -> set[str]:
    """The figure functions (``*_figure``) the report's sections call."""
    tree = ast.parse(inspect.getsource(sections))
    aliases = _aliases(tree)
    names = {_named(node.func, aliases) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    return {name for name in names if name is not None and name.endswith("_figure")}


def test_every_page_of_the_navigation_declares_its_figures():
    assert list(PAGE_FIGURES) == [page.url_path for page in PAGES]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.url_path)
def test_each_page_draws_its_declared_figures_in_order(page):
    declared = [figure.name for figure in PAGE_FIGURES[page.url_path]]
    assert drawn_by_page(ROOT / page.file) == declared


def test_the_report_draws_the_figures_the_pages_mark_for_it():
    assert drawn_by_report() == page_figures.report_figures()
    # A figure a page keeps out of the report is drawn there through another entry: the Depth page's adjusted
    # views (the raw ones are in), the Home page's alpha profile (the Scaling page's is in).
    left_out = {figure.name for figures in PAGE_FIGURES.values() for figure in figures if not figure.report}
    assert left_out - page_figures.report_figures() == set()


def test_the_figures_a_page_draws_follow_what_holds():
    scaling = [figure.figure.__name__ for figure in page_figures.page_figures("scaling")]
    assert scaling == ["scaling_figure", "profile_figure"]
    with_tokens = page_figures.page_figures("scaling", When.TOKEN_FACTS, When.MASSIVE_CONTROL)
    assert [figure.figure.__name__ for figure in with_tokens][2:] == ["tokenization_figure", "massive_control_figure"]
    assert page_figures.page_figures("design") == ()
    assert len(page_figures.page_figures("design", When.SIMULATED)) == 3
    assert len(page_figures.page_figures("depth", When.ADJUSTED_VIEW)) == len(page_figures.page_figures("depth")) + 2
    with pytest.raises(AnalysisError, match="no page 'nowhere'"):
        page_figures.page_figures("nowhere")


def test_the_agreement_checks_would_catch_a_figure_drawn_but_not_declared(tmp_path):
    page = tmp_path / "page.py"
    page.write_text("from magdash.presentation import weber_figures as wf\nfrom pages import ui\n"
                    "ui.figure(wf.cv_figure, key)\nui.figure(wf.e3_figure, key)\n", encoding="utf-8")
    assert drawn_by_page(page) == ["magdash.presentation.weber_figures:cv_figure",
                                   "magdash.presentation.weber_figures:e3_figure"]
    assert drawn_by_page(page) != [figure.name for figure in PAGE_FIGURES["weber"]]
