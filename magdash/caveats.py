"""What a reader must know before trusting a number, as data: :class:`Caveat`.

An analysis says what may make its numbers misleading (vectors of outsized norm, a carrier that
drives a result, points the outlier rule dropped, the paper's consistency checks that tripped) as
caveats: a severity, the measures and the model concerned, and one sentence. The command line
and the report print them as lines (:meth:`Caveat.line`), most severe first; the dashboard shows,
on each page, only those about what the page shows (:func:`about`: the selected measure, the
shown models), the most severe in view and the rest folded
(:func:`magdash.dashboard.warnings_panel.panel`).

The severities, one rule for every producer:

- ``SERIOUS``: the number shown may be an artifact rather than the model's: vectors of outsized
  norm (an attention sink) enter it;
- ``CAUTION``: the number shown leans on a few of its points or misses some: a carrier that
  drives the result (:mod:`magdash.variability.artifacts`), layers left out for Inf/NaN vectors,
  OLS exponents leaning on a few magnitudes;
- ``NOTE``: context for reading it: points the outlier rule dropped, how the measures differ
  in the paper's consistency checks, a check that could not be judged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum


class Severity(IntEnum):
    """How much a caveat weighs on the number it concerns; a larger value is more severe."""

    NOTE = 1
    CAUTION = 2
    SERIOUS = 3


@dataclass(frozen=True)
class Caveat:
    """One thing to know before trusting a number.

    Attributes:
        severity: how much it weighs (:class:`Severity`; the module docstring gives the rule).
        text: the sentence, without the model's name.
        measures: the measures it concerns (``eucl``, ``proj``, ...); empty: every measure.
        model: the model it concerns ("" when it is not one model's).
        carrier: the carrier it blames (its index; None: none), which a reader can leave out.
    """

    severity: Severity
    text: str
    measures: tuple[str, ...] = ()
    model: str = ""
    carrier: int | None = None

    def concerns(self, measure: str | None = None, models: Iterable[str] | None = None) -> bool:
        """Whether the caveat is about ``measure`` and one of ``models``.

        Args:
            measure: the measure shown; None: any.
            models: the models shown; None: any. A caveat of no model concerns every one.
        """
        if measure is not None and self.measures and measure not in self.measures:
            return False
        return models is None or not self.model or self.model in set(models)

    def line(self, leave_out: Callable[[int], str] | None = None) -> str:
        """The caveat as one line, named by its model: ``"gemma: V_eucl: ..."``, and for a caveat
        that blames a carrier how to leave it out where it is read (``leave_out(carrier)``: the
        Python parameter by default, :func:`python_leave_out`; the command line gives its option,
        the dashboard its sidebar's words instead).

        Args:
            leave_out: how a carrier is left out where the line is read ("": said elsewhere);
                None: the Python parameter.
        """
        text = f"{self.model}: {self.text}" if self.model else self.text
        hint = "" if self.carrier is None else (leave_out or python_leave_out)(self.carrier)
        return f"{text} ({hint})" if hint else text


def python_leave_out(carrier: int) -> str:
    """How the Python API leaves carrier ``carrier`` out of an analysis.

    Args:
        carrier: the carrier's index.
    """
    return f"exclude_carriers=({carrier},) leaves it out"


def ranked(caveats: Iterable[Caveat]) -> list[Caveat]:
    """The caveats most severe first, in their given order within a severity.

    Args:
        caveats: the caveats, in the order their producers give them.
    """
    return sorted(caveats, key=lambda caveat: -caveat.severity)


def about(caveats: Iterable[Caveat], measure: str | None = None,
          models: Sequence[str] | None = None) -> list[Caveat]:
    """The caveats about what is shown (:meth:`Caveat.concerns`), most severe first, each once.

    Args:
        caveats: every caveat of the results shown.
        measure: the measure shown; None: every measure.
        models: the models shown; None: every model.
    """
    kept = [caveat for caveat in caveats if caveat.concerns(measure, models)]
    return ranked(dict.fromkeys(kept))


def lines(caveats: Iterable[Caveat], leave_out: Callable[[int], str] | None = None) -> list[str]:
    """The caveats as lines (:meth:`Caveat.line`), most severe first.

    Args:
        caveats: the caveats.
        leave_out: how a carrier is left out where the lines are read (:meth:`Caveat.line`).
    """
    return [caveat.line(leave_out) for caveat in ranked(caveats)]
