"""User-facing error types.

Every mistake a user can make (a missing model, a carrier without ``{n}``, a bad magnitude
spec, an npz without ``per_carrier``) raises a subclass of :class:`MagdashError` whose message
says what to fix. The CLI turns these into a one-line message and exit status 2; the pages show
them with ``st.error``. Anything else escaping is a bug.
"""


class MagdashError(Exception):
    """A problem with the user's input or environment, with a message that says what to fix."""


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
