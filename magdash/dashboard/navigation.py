"""The app's pages: their navigation groups, files under ``pages/``, titles and URL paths, and
the science notes (``docs/science.md``) a page shows beside its figures."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PageSpec:
    """One page of the app: its navigation group, file under ``pages/``, title and URL path."""

    group: str
    file: str
    title: str
    icon: str
    url_path: str


PAGES: tuple[PageSpec, ...] = (
    PageSpec("Data", "pages/home.py", "Home", ":material/home:", "home"),
    PageSpec("Data", "pages/extract.py", "Extract", ":material/download:", "extract"),
    PageSpec("Data", "pages/stimuli.py", "Stimuli", ":material/edit_note:", "stimuli"),
    PageSpec("Noise", "pages/scaling.py", "Scaling", ":material/show_chart:", "scaling"),
    PageSpec("Noise", "pages/weber.py", "Weber", ":material/rule:", "weber"),
    PageSpec("Noise", "pages/frequency.py", "Frequency", ":material/bar_chart:", "frequency"),
    PageSpec("Noise", "pages/compare.py", "Compare", ":material/compare_arrows:", "compare"),
    PageSpec("Geometry", "pages/geometry.py", "Geometry", ":material/scatter_plot:", "geometry"),
    PageSpec("Geometry", "pages/probes.py", "Probes", ":material/troubleshoot:", "probes"),
    PageSpec("Depth", "pages/depth.py", "Depth", ":material/layers:", "depth"),
    PageSpec("Behaviour", "pages/behaviour.py", "Behaviour", ":material/psychology:", "behaviour"),
    PageSpec("Behaviour", "pages/steering.py", "Steering", ":material/tune:", "steering"),
    PageSpec("Robustness", "pages/controls.py", "Controls", ":material/verified:", "controls"),
    PageSpec("Robustness", "pages/design.py", "Design", ":material/science:", "design"),
)
"""Every page, in navigation order; groups follow Data · Noise · Geometry · Depth · Behaviour · Robustness."""


def page_groups(pages: Sequence[PageSpec] = PAGES, *, root: str | os.PathLike = ".") -> dict[str, list[PageSpec]]:
    """Pages by group, keeping only those whose file exists under ``root``."""
    groups: dict[str, list[PageSpec]] = {}
    for page in pages:
        if (Path(root) / page.file).is_file():
            groups.setdefault(page.group, []).append(page)
    return groups


SCIENCE_NOTES = Path(__file__).resolve().parents[2] / "docs" / "science.md"
DEPTH_EXAMPLE = SCIENCE_NOTES.with_name("depth_example.md")


def science_notes() -> str | None:
    """docs/science.md — how every number is computed, the two conventions, the known
    differences from the paper — when the repository is at hand (None for a bare install)."""
    return _document(SCIENCE_NOTES)


def depth_example() -> str | None:
    """docs/depth_example.md — the all-token worked example of the depth diagnostics on a real
    decoder, raw and adjusted — when the repository is at hand (None for a bare install)."""
    return _document(DEPTH_EXAMPLE)


def _document(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None
