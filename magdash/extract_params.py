"""The parameters of an extraction and their defaults, importable without torch or the store
(the CLI builds its options from them before anything heavy is loaded)."""

from __future__ import annotations

from dataclasses import dataclass, field

from magdash.errors import MagdashError
from magdash.params import DEFAULT_DEVICE, DEFAULT_DTYPE, DTYPES, option
from magdash.stimuli import DEFAULT_POSITION, POSITIONS

DEFAULT_BATCH_SIZE = 32
TEXT_BATCH_SIZE = 16
"""Sequences per forward pass when whole texts run through a model (the depth diagnostics of
prompts or a document's chunks): each up to a context long, so fewer than the stimulus sentences'
:data:`DEFAULT_BATCH_SIZE`."""
PADDING_SIDES = ("right", "left")
DEFAULT_PADDING_SIDE = PADDING_SIDES[0]


@dataclass(frozen=True)
class ExtractParams:
    """How a model is loaded and run over the stimuli (what changes the stored vectors is part
    of the model's identity: dtype, token position, and a prepended BOS); shared by the CLI, the
    Python API, the app and sweep plans."""

    dtype: str = field(default=DEFAULT_DTYPE, metadata=option(
        "the dtype the model runs in (float16 halves the memory; the paper's models ran in fp16)", choices=DTYPES))
    device: str = field(default=DEFAULT_DEVICE, metadata=option("auto, cpu, cuda, cuda:1, mps", metavar="DEVICE"))
    device_map: str | None = field(default=None, metadata=option(
        "spread a model larger than one GPU over all of them (accelerate)", choices=("auto",)))
    position: str = field(default=DEFAULT_POSITION, metadata=option(
        "which of the number's tokens is kept (last: the paper's)", choices=POSITIONS))
    batch_size: int = field(default=DEFAULT_BATCH_SIZE, metadata=option(
        "sentences per forward pass (lower it if the model runs out of memory)", metavar="B"))
    padding_side: str = field(default=DEFAULT_PADDING_SIDE, metadata=option(
        "where a batch's shorter sentences are padded", choices=PADDING_SIDES))
    trust_remote_code: bool = field(default=False, metadata=option(
        "run code shipped with the model (only for models you trust)"))
    allow_pickle: bool = field(default=False, metadata=option(
        "load pickle (.bin) weights, which can run code (only for files you trust)"))
    allow_number_first: bool = field(default=False, metadata=option(
        "a model with no BOS token: measure carriers that put the number at position 0 (an attention sink) anyway"))
    model_cache: str | None = field(default=None, metadata=option(
        "where GGUF models are converted once", metavar="DIR", default_text="$MAGDASH_MODEL_CACHE or cache/models"))

    def __post_init__(self) -> None:
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise MagdashError(f"batch_size={self.batch_size!r} must be a whole number of at least 1",
                               parameters=("batch_size",))
        if self.padding_side not in PADDING_SIDES:
            raise MagdashError("padding side must be 'left' or 'right'")
        if self.position not in POSITIONS:
            raise MagdashError(f"unknown token position {self.position!r}: use one of {', '.join(POSITIONS)}")
        if self.dtype not in DTYPES:
            raise MagdashError(f"unknown dtype {self.dtype!r}: use one of {', '.join(DTYPES)}")
        if self.device_map not in (None, "auto"):
            raise MagdashError(f"unknown device map {self.device_map!r}: use 'auto' or none")
        if self.model_cache is not None:
            object.__setattr__(self, "model_cache", str(self.model_cache))
