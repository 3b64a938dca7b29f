"""``SPEC@random`` (or ``SPEC@random:SEED``): the same architecture with seeded random weights,
the untrained control of any other source.

It is not a place weights come from but a change to one: the base spec is resolved by its own
kind, then the weights' fingerprint is replaced by the seed and a digest of the architecture's
configuration, so two controls of one architecture and seed are the same model wherever its
files lie.
"""

from __future__ import annotations

from magdash.errors import ModelLoadError
from magdash.names import RANDOM_SUFFIX

HINT = f"append {RANDOM_SUFFIX} (or {RANDOM_SUFFIX}:SEED) for the same architecture with seeded random weights"


def split_random_suffix(spec: str) -> tuple[str, bool, int]:
    """``name@random:7`` -> (``name``, True, 7); anything else -> (spec, False, 0)."""
    base, marker, seed_text = spec.partition(RANDOM_SUFFIX)
    if not marker:
        return spec, False, 0
    if seed_text and not seed_text.startswith(":"):
        raise ModelLoadError(f"cannot read {spec!r}: write NAME{RANDOM_SUFFIX} or NAME{RANDOM_SUFFIX}:SEED")
    seed_text = seed_text[1:]
    if seed_text and not seed_text.isdigit():
        raise ModelLoadError(f"random seed {seed_text!r} in {spec!r} is not a whole number")
    return base, True, int(seed_text or 0)


def with_random(spec: str, seed: int = 0) -> str:
    """The spec of ``spec``'s random-weight control with ``seed`` (the inverse of
    :func:`split_random_suffix`)."""
    return f"{spec}{RANDOM_SUFFIX}" if seed == 0 else f"{spec}{RANDOM_SUFFIX}:{int(seed)}"


def random_fingerprint(seed: int, config_digest: str, *, gguf: bool = False) -> str:
    """The fingerprint of seeded random weights of the architecture whose configuration has
    ``config_digest`` (a GGUF file's hyperparameters, or a folder's ``config.json``)."""
    return f"random:seed={seed}:{'gguf-config' if gguf else 'config'}={config_digest}"
