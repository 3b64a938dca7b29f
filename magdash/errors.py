"""User-facing error types.

Every mistake a user can make (a missing model, a carrier without ``{n}``, a bad magnitude
spec, an npz without ``per_carrier``) raises a subclass of :class:`MagdashError` whose message
says what to fix. The CLI turns these into a one-line message and exit status 2; the pages show
them with ``st.error``. Anything else escaping is a bug.

A message names a parameter as the Python API spells it (``stimuli=``) and lists it in the
error's ``parameters``; the CLI writes each as its option (``--stimuli``) before printing.
"""

import re
from collections.abc import Callable, Iterable, Sequence


class MagdashError(Exception):
    """A problem with the user's input or environment, with a message that says what to fix.

    Args:
        message: what went wrong and what to do; a parameter named in it is written ``name=``.
        parameters: the parameters the message names as ``name=`` (the CLI writes them as options).
    """

    def __init__(self, message: str = "", *, parameters: Sequence[str] = ()):
        super().__init__(message)
        self.parameters = tuple(parameters)


class StimulusError(MagdashError):
    """Carrier sentences or magnitude specifications that cannot be used."""


class ModelLoadError(MagdashError):
    """A model that cannot be found, is unsafe to load, or lacks what extraction needs."""


class StoreError(MagdashError):
    """A store that cannot be opened, is of an unknown schema, or lacks the requested data."""


class NoStoreError(StoreError):
    """Nothing is stored at the path, and the operation only reads (reading never creates a store)."""


class ReadOnlyStoreError(StoreError):
    """A write asked of a store opened read-only (the dashboard's read-only mode)."""


class AnalysisError(MagdashError):
    """Data that cannot be analysed (too few points, wrong shapes, nothing stored)."""


class PlanError(MagdashError):
    """A sweep plan that cannot be run (bad TOML, unknown keys, tasks, dtypes or models)."""


def rewrite_parameters(text: str, names: Iterable[str], rewrite: Callable[[str, str], str]) -> str:
    """``text`` with each parameter of ``names`` it writes as ``name=value`` (or a bare ``name=``)
    replaced by ``rewrite(name, value)``: how the command line and the pages say a library
    message in their own words (an option, a widget's label).

    Args:
        text: a message.
        names: the parameters to rewrite.
        rewrite: the words for one (``value`` as written: ``'paper'``, ``(3,)``, ``-1``, or "").
    """
    ordered = sorted(set(names), key=len, reverse=True)
    if not ordered:
        return text
    pattern = (rf"(?<![\w.:-])({'|'.join(map(re.escape, ordered))})="
               r"(\([^)]*\)|'[^']*'|\"[^\"]*\"|(?:[^\s,;)]*[^\s,;).:])?)")
    return re.sub(pattern, lambda found: rewrite(found.group(1), found.group(2)), text)
