"""The documentation site's commands run as written, in the order a reader meets them.

Every ``bash`` and ``python`` block of every page in ``mkdocs.yml``'s navigation, in navigation
order, runs in one shell in an empty folder holding only the repository's virtual environment
(``tests/doc_commands.py``: the same rules as the README's). A block is left out only where its
page says why: *your files*, a *measured example*, or ``<!-- not run: KEY -->`` (a GPU, a
cluster, a server, the set-up itself); the test lists them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.doc_commands import PLACEHOLDERS, Block, command_blocks, run_in_a_fresh_folder, shell_script, why_not_run
from tests.support import ROOT

DOCS = ROOT / "docs"


def nav_pages(nav=None) -> list[str]:
    """The Markdown pages of the site's navigation, in order (paths under docs/)."""
    if nav is None:
        nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    pages: list[str] = []
    for entry in nav:
        item = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(item, list):
            pages += nav_pages(item)
        elif item.endswith(".md"):
            pages.append(item)
    return pages


def docs_blocks() -> list[Block]:
    blocks = []
    for page in nav_pages():
        blocks += command_blocks((DOCS / page).read_text(encoding="utf-8"), page)
    return blocks


def test_every_page_of_the_docs_folder_is_in_the_navigation():
    pages = nav_pages()
    assert len(pages) == len(set(pages))
    on_disk = {str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md")}
    assert on_disk == set(pages)


def test_the_blocks_left_out_say_why():
    blocks = docs_blocks()
    left_out = {}
    for block in blocks:
        reason = why_not_run(block)
        if reason is None:
            assert not any(p in block.body for p in PLACEHOLDERS), f"{block.page} runs a block of your files:\n{block.body}"
        else:
            left_out.setdefault(reason, []).append(block.page)
    # What is not run, and why: the set-up, servers, GPUs and clusters, your files, measured examples.
    assert {"setup", "server", "gpu", "cluster", "yours", "example"} <= {b.kind for b in blocks}
    print("\n".join(f"not run ({reason}): {', '.join(sorted(set(pages)))}" for reason, pages in left_out.items()))


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.timeout(1800)
def test_the_docs_commands_run_as_written_in_order(tmp_path):
    blocks = docs_blocks()
    runs = [b for b in blocks if b.kind == "run"]
    assert runs[0].page == "getting-started.md" and runs[0].body.startswith("source .venv/bin/activate\n")
    script = shell_script(blocks)
    result, served, work = run_in_a_fresh_folder(script, tmp_path)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert served == script.count("python -m magdash ")  # each in a process of its own
    assert "minilm-copy" in result.stdout  # the imported copy is listed by a later command
    assert (work / "cache" / "magdash.duckdb").is_file() and (work / "minilm.npz").is_file()
    assert (work / "controls.html").is_file() and (work / "design.html").is_file()
    assert "Wilcoxon p = 0.25" in result.stdout  # compare ran on the paper's stimuli
    assert "mean_core_alpha" in result.stdout  # the SQL how-to's query read the metric tables


def test_nav_pages_reads_nested_sections(tmp_path: Path):
    nav = [{"Home": "index.md"}, {"Guide": [{"A": "a.md"}, {"Deeper": [{"B": "b/c.md"}]}]}, {"Nb": "x.ipynb"}]
    assert nav_pages(nav) == ["index.md", "a.md", "b/c.md"]
