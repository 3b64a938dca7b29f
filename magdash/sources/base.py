"""What every kind of model source shares: the resolved :class:`ModelSource`, the
:class:`SourceKind` each kind's module declares, and the reading of a Hugging Face model folder.

Resolving imports neither torch nor transformers (a tokenizer is read only to tell how a sentence
starts, and only when asked), so checking whether a model is already stored costs no model load.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from magdash.errors import ModelLoadError

if TYPE_CHECKING:
    from magdash.sources.gguf import GGUFInfo

log = logging.getLogger(__name__)

SAMPLED_HASH_LIMIT = 512 * 1024 * 1024
_SAMPLE_BYTES = 1 << 20
_PICKLE_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "model.ckpt.index")


@dataclass(frozen=True)
class Located:
    """Where a kind found a spec's files: a folder or GGUF file, and the ``source`` the store
    records (``KIND:VALUE``; :func:`magdash.sources.spec_for_source` reads it back)."""

    path: Path
    source: str
    revision: str | None = None
    """The Hugging Face cache's snapshot (a commit), which identifies the weights without hashing them."""
    is_gguf: bool = False
    """The file is GGUF whatever its name (Ollama's blobs are named by their digest)."""


@dataclass(frozen=True)
class SourceKind:
    """One kind of model source, as its module declares it.

    ``locate(base, model_cache)`` finds a spec's files, or returns None when the spec is not of
    this kind (the resolver then asks the next kind); ``spec_from_choice(value)`` turns what a
    user picked or typed for this kind (the Extract page) into a spec; ``spec_from_source(value)``
    turns the value of a stored ``KIND:VALUE`` source back into the spec that loads the weights
    again (None when they are no longer at hand); ``choices()`` lists what there is to pick
    (None: the user types it), and ``nothing_to_choose`` says what to do when it is empty.

    Attributes:
        name: the kind's name, the ``KIND`` of a stored ``KIND:VALUE`` source (``folder``, ``gguf``, ``ollama``, ...).
        label: how the Extract page names the kind.
        hint: what a spec of this kind is, for help texts and messages.
        example: an example spec.
        locate: ``locate(spec, model_cache)``: the spec's files, or None when the spec is not of this kind.
        spec_from_choice: turns what a user picked or typed for this kind into a spec.
        spec_from_source: turns a stored source's value back into the spec that loads the weights again (None when they
            are gone).
        choices: lists what there is to pick (None: the user types it).
    """

    name: str
    label: str
    hint: str
    example: str
    locate: Callable[[str, Path], Located | None]
    spec_from_choice: Callable[[str], str]
    spec_from_source: Callable[[str], str | None]
    choices: Callable[[], list[str]] | None = None
    nothing_to_choose: str = ""
    """What to do when ``choices()`` is empty."""


@dataclass(frozen=True)
class ModelSource:
    """Where a model's files are and what identifies its weights, resolved without loading it.

    Attributes:
        spec: the model as the user named it (``minilm``, a folder, ``ollama:llama3.2:1b``, with any ``@random``).
        path: the folder (or GGUF file) the weights and config are read from.
        source: where the weights come from as ``KIND:VALUE`` (``builtin:minilm``, ``folder:/models/x``, ...), recorded
            with the model.
        fingerprint: what identifies the weights: a Hugging Face commit, a SHA-256 of the files, a GGUF hash with its
            quantization, or a random seed.
        architecture: the model's architecture, from its config.
        is_random: whether the weights are a seeded random initialisation (``@random``).
        seed: the random weights' seed.
        uses_pickle: whether the weights are a pickle checkpoint (loaded only with ``allow_pickle``).
    """

    spec: str
    path: Path
    source: str
    fingerprint: str
    architecture: str
    is_random: bool = False
    seed: int = 0
    uses_pickle: bool = False
    gguf: GGUFInfo | None = None
    """The :class:`~magdash.sources.gguf.GGUFInfo` of the file the weights come from (converted on load), or None."""
    model_cache: Path | None = None
    """Where a GGUF model's conversion is kept (default: :func:`magdash.sources.gguf.model_cache_dir`)."""

    def model_id(self, dtype: str, position: str, transformers_version: str) -> str:
        """Identity of the vectors this model produces: weights, dtype, library version, position,
        and a prepended BOS token (:attr:`sequence_start`) where magdash adds one: such vectors
        differ from those of the same sentences without it.

        Args:
            dtype: the dtype the model runs in.
            position: which of the number's tokens is kept.
            transformers_version: the transformers version that runs it.
        """
        payload = f"{self.fingerprint}|{dtype}|{transformers_version}|{position}"
        if self.sequence_start.startswith("bos:"):
            payload += f"|start={self.sequence_start}"
        return hashlib.sha1(payload.encode()).hexdigest()[:20]

    @functools.cached_property
    def sequence_start(self) -> str:
        """How a sentence starts before its first word (:func:`sequence_start_rule`), read from
        the GGUF header or the tokenizer and config, without loading the weights."""
        if self.gguf is not None:
            return self.gguf.sequence_start
        from magdash.sources.loading import load_tokenizer

        return sequence_start_rule(load_tokenizer(self), read_config(self.path).get("bos_token_id"))


def sequence_start_rule(tokenizer, config_bos_token_id: object = None) -> str:
    """How every sentence starts before its first word, so that no number lands at position 0.

    A sequence's first position is an attention sink in decoders: the model writes a vector of
    a very large norm there whatever the token (Xiao et al. 2023, arXiv 2309.17453; SmolLM2's
    norm there is about a hundred times that of the same token later), so a number at position 0
    would be measured in the sink, not as a number. Returns

    - ``"tokenizer"`` when the tokenizer puts special tokens before the text itself (BERT's
      ``[CLS]``, Llama's and Gemma's ``<bos>``): nothing to add;
    - ``"bos:<id>"`` when it does not but the model has a BOS token (the tokenizer's, else the
      config's ``bos_token_id``): magdash prepends it, and it is part of the model's identity;
    - ``"none"`` when the model has no BOS token: carriers that put the number first are refused
      unless the user allows them (``--allow-number-first``).

    Args:
        tokenizer: the model's fast tokenizer.
        config_bos_token_id: the model config's ``bos_token_id``, if any.
    """
    probe = "7 items"
    with_specials = list(tokenizer(probe, add_special_tokens=True)["input_ids"])
    plain = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    if plain and with_specials[:1] != plain[:1] and any(
            with_specials[i:i + len(plain)] == plain for i in range(1, len(with_specials) - len(plain) + 1)):
        return "tokenizer"
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None and isinstance(config_bos_token_id, int) and not isinstance(config_bos_token_id, bool):
        bos = config_bos_token_id
    return f"bos:{int(bos)}" if bos is not None else "none"


def existing_path(base: str) -> Path | None:
    """The local file or folder ``base`` names (``~`` expanded, resolved), or None."""
    try:
        path = Path(base).expanduser()
        return path.resolve() if path.exists() else None
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return None


def read_config(path: Path) -> dict:
    """A Hugging Face model folder's ``config.json``."""
    config_file = path / "config.json"
    try:
        return json.loads(config_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelLoadError(f"{str(path)!r} has no config.json: point at a Hugging Face model folder") from None
    except (OSError, ValueError) as error:
        raise ModelLoadError(f"cannot read {str(config_file)!r}: {error}") from None


def weight_files(path: Path, allow_pickle: bool) -> tuple[list[Path], bool]:
    """A model folder's weight files, and whether they are pickle checkpoints (refused unless
    ``allow_pickle``: loading one can run code)."""
    safetensors = sorted(path.glob("*.safetensors"))
    if safetensors:
        return safetensors, False
    pickles = [path / name for name in _PICKLE_WEIGHTS if (path / name).exists()]
    pickles += sorted(path.glob("pytorch_model-*.bin"))
    if pickles and allow_pickle:
        log.warning("loading pickle weights from %s: only do this for files you trust", path)
        return pickles, True
    if pickles:
        raise ModelLoadError(
            f"{str(path)!r} holds only pickle weights ({pickles[0].name}), which can run code when "
            "loaded; convert them to safetensors, or pass allow_pickle=True if you trust the files",
            parameters=("allow_pickle",),
        )
    raise ModelLoadError(f"{str(path)!r} holds no *.safetensors weights")


def fingerprint_files(files: list[Path]) -> str:
    """SHA-256 over the weight files: whole files up to 512 MB in total, else sampled.

    Hashing 16 GB of Llama weights on every run would cost minutes, so large checkpoints are
    fingerprinted by their names, sizes, safetensors headers and sixteen 1 MB samples spread
    over each file. Two different checkpoints (fine-tunes change every tensor) never collide.
    """
    digest = hashlib.sha256()
    total = sum(f.stat().st_size for f in files)
    for file in files:
        size = file.stat().st_size
        digest.update(f"{file.name}:{size}".encode())
        with open(file, "rb") as handle:
            if total <= SAMPLED_HASH_LIMIT:
                for chunk in iter(lambda: handle.read(1 << 22), b""):
                    digest.update(chunk)
                continue
            header = handle.read(8)
            digest.update(header)
            if len(header) == 8:
                digest.update(handle.read(min(int.from_bytes(header, "little"), 100 << 20)))
            for index in range(16):
                handle.seek(max(0, (size - _SAMPLE_BYTES) * index // 15))
                digest.update(handle.read(_SAMPLE_BYTES))
    return digest.hexdigest()[:32]
