"""The names models get in a store: one rule for an extraction's name, its variants' and its
``@random`` control's, so the CLI, the app, sweeps and the controls agree on them.

An extraction of spec ``S`` is stored as ``S``, with a dtype other than float32 and a token
position other than ``last`` appended (``minilm:float16``, ``minilm:bfloat16:first``). Its
``@random`` control (the same architecture with seeded random weights) is ``S@random`` with the
same suffixes after the marker, as extracting the control with the same options names it.
"""

from __future__ import annotations

from magdash.params import DEFAULT_DTYPE, DTYPES
from magdash.stimuli import DEFAULT_POSITION, POSITIONS

RANDOM_SUFFIX = "@random"
"""What turns a model spec into its untrained control (``minilm@random``, ``minilm@random:7``)."""


def default_name(spec: str, dtype: str = DEFAULT_DTYPE, position: str = DEFAULT_POSITION) -> str:
    """Store name of an extraction: the spec, with a non-default dtype and position appended.

    Args:
        spec: the model as the user named it (``minilm``, a folder, ``ollama:llama3.2``).
        dtype: the extraction's dtype (one of :data:`~magdash.params.DTYPES`).
        position: the token position rule (one of :data:`~magdash.stimuli.POSITIONS`).
    """
    name = spec.strip()
    if dtype != DEFAULT_DTYPE:
        name += f":{dtype}"
    if position != DEFAULT_POSITION:
        name += f":{position}"
    return name


def split_options(name: str) -> tuple[str, str]:
    """``minilm:bfloat16:first`` -> (``minilm``, ``:bfloat16:first``): the spec and the options
    :func:`default_name` appended (a dtype, then a position)."""
    spec, suffix = name, ""
    for options in (POSITIONS, DTYPES):
        for option in options:
            if spec.endswith(f":{option}") and len(spec) > len(option) + 1:
                spec, suffix = spec[: -len(option) - 1], f":{option}{suffix}"
                break
    return spec, suffix


def control_name(name: str) -> str:
    """Store name of the ``@random`` control of the model stored as ``name``
    (``minilm:float16`` -> ``minilm@random:float16``); a control's own name is returned unchanged."""
    spec, suffix = split_options(name)
    return name if RANDOM_SUFFIX in spec else f"{spec}{RANDOM_SUFFIX}{suffix}"


def variant_name(model: str, *, dtype: str = DEFAULT_DTYPE, position: str = DEFAULT_POSITION) -> str:
    """The store name an extraction of ``model``'s spec with another dtype or position gets:
    ``minilm`` -> ``minilm:float16``, ``minilm:first``."""
    return default_name(split_options(model)[0], dtype, position)


def is_control_name(name: str) -> bool:
    """Whether a stored name is a random-weight control's."""
    return RANDOM_SUFFIX in name


def model_of_control(name: str) -> str:
    """The model an ``@random`` control stands beside (``minilm@random:float16`` -> ``minilm:float16``,
    ``minilm@random:7`` -> ``minilm``); a trained model's own name is returned unchanged."""
    if not is_control_name(name):
        return name
    spec, suffix = split_options(name)
    return f"{spec.split(RANDOM_SUFFIX)[0]}{suffix}"
