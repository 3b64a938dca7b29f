"""One warnings panel per page, free of Streamlit: which caveats a page shows, and how.

A page passes every caveat of the results it draws (:class:`magdash.caveats.Caveat`) with the
measure and the models it shows; :func:`panel` keeps those about what is shown
(:func:`magdash.caveats.about`), most severe first, puts the most severe in view (at most
``MAX_SHOWN``, and never a note: notes are context) and folds the rest under one line that counts
them. ``pages/ui`` draws it: a serious caveat as an error box, a caution as a warning box.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from magdash.caveats import Caveat, Severity, about

MAX_SHOWN = 2
"""At most this many caveats stand in view above a page's first chart; the rest are folded."""


@dataclass(frozen=True)
class WarningsPanel:
    """What a page's warnings panel holds.

    Attributes:
        shown: the caveats in view, most severe first.
        folded: the rest, most severe first, under :attr:`fold_label`.
    """

    shown: tuple[Caveat, ...]
    folded: tuple[Caveat, ...]

    @property
    def fold_label(self) -> str:
        """The folded part's one line: "3 more notes", "1 note" when nothing is in view."""
        count = len(self.folded)
        more = "more " if self.shown else ""
        return f"{count} {more}note{'' if count == 1 else 's'}"

    @property
    def blames_a_carrier(self) -> bool:
        """Whether a caveat of the panel blames a carrier (one a reader can leave out)."""
        return any(caveat.carrier is not None for caveat in (*self.shown, *self.folded))

    def __bool__(self) -> bool:
        return bool(self.shown or self.folded)


def panel(caveats: Iterable[Caveat], measure: str | None = None, models: Sequence[str] | None = None,
          max_shown: int = MAX_SHOWN) -> WarningsPanel:
    """The panel of the caveats about ``measure`` and ``models``: the most severe in view, the rest folded.

    In view: the caveats of the highest severity present, up to ``max_shown``, when it is above
    :attr:`~magdash.caveats.Severity.NOTE`.

    Args:
        caveats: every caveat of the results the page draws.
        measure: the measure the page shows; None: a page of every measure.
        models: the models the page shows; None: every model.
        max_shown: the most caveats in view.
    """
    kept = about(caveats, measure, models)
    top = kept[0].severity if kept else Severity.NOTE
    count = 0 if top <= Severity.NOTE else min(max_shown, sum(c.severity == top for c in kept))
    return WarningsPanel(tuple(kept[:count]), tuple(kept[count:]))
