"""The resolver: a model spec to a :class:`~magdash.sources.base.ModelSource`, by asking each kind
of source in turn, without loading any weights.

A spec is one of the kinds of :data:`SOURCE_KINDS` (a built-in name, ``ollama:NAME[:TAG]``, a
GGUF file, a local folder, a repo id in the Hugging Face cache), optionally followed by
``@random`` or ``@random:SEED`` (:mod:`magdash.sources.random_weights`). Nothing is ever
downloaded. Whatever located the files, a GGUF file is identified by its hash and quantization
type and converted once on load, a model folder by its weights' fingerprint (or the cache's commit).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from magdash.errors import ModelLoadError
from magdash.sources import builtin, folder, gguf, hf_cache, ollama, random_weights
from magdash.sources.base import Located, ModelSource, SourceKind, fingerprint_files, read_config, weight_files

SOURCE_KINDS: tuple[SourceKind, ...] = (builtin.KIND, ollama.KIND, gguf.KIND, folder.KIND, hf_cache.KIND)
"""Every kind of model source, in the order the resolver asks them."""

KINDS_BY_NAME = {kind.name: kind for kind in SOURCE_KINDS}


def model_hint() -> str:
    """What a model spec can be, for help texts and the message of a spec nothing resolves."""
    kinds = "; ".join(kind.hint for kind in SOURCE_KINDS)
    return f"{kinds}; {random_weights.HINT}"


def resolve_model(spec: str, *, allow_pickle: bool = False, model_cache: str | Path | None = None) -> ModelSource:
    """Find a model's files and fingerprint them, without loading any weights.

    Args:
        spec: the model as the user names it (module docstring).
        allow_pickle: accept a folder holding only pickle checkpoints (they can run code).
        model_cache: where GGUF models are converted (and gemma3-270m assembled); default
            ``$MAGDASH_MODEL_CACHE`` or ``cache/models``.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ModelLoadError("no model given: use 'minilm', a model folder, or a Hugging Face repo id")
    spec = spec.strip()
    cache = gguf.model_cache_dir(model_cache)
    base, is_random, seed = random_weights.split_random_suffix(spec)
    for kind in SOURCE_KINDS:
        located = kind.locate(base, cache)
        if located is not None:
            return _source(spec, located, is_random, seed, cache, allow_pickle)
    cached = hf_cache.cached_repo_ids()
    known = f" Models in your Hugging Face cache: {', '.join(cached[:10])}." if cached else ""
    raise ModelLoadError(f"no model {base!r}: give {model_hint()}.{known}")


def _source(spec: str, located: Located, is_random: bool, seed: int, cache: Path, allow_pickle: bool) -> ModelSource:
    path = located.path
    gguf_file = path if located.is_gguf else gguf.find_gguf(path)
    if gguf_file is not None:
        return _gguf_source(spec, gguf_file, located.source, is_random, seed, cache)
    if path.is_file():
        raise ModelLoadError(f"{str(path)!r} is a file: give a .gguf file or a model folder")
    config = read_config(path)
    architecture = ",".join(config.get("architectures") or [config.get("model_type", "unknown")])
    if is_random:
        config_digest = hashlib.sha1(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]
        fingerprint = random_weights.random_fingerprint(seed, config_digest)
        return ModelSource(spec, path, located.source, fingerprint, architecture, True, seed, False)
    weights, uses_pickle = weight_files(path, allow_pickle)
    revision = located.revision
    fingerprint = f"commit:{revision}" if revision else f"sha256:{fingerprint_files(weights)}"
    return ModelSource(spec, path, located.source, fingerprint, architecture, False, 0, uses_pickle)


def _gguf_source(spec: str, file: Path, source: str, is_random: bool, seed: int, cache: Path) -> ModelSource:
    """A GGUF model is identified by its file's SHA-256 and quantization type, read without loading it."""
    info = gguf.gguf_info(file)
    architecture = f"{info.architecture} (GGUF)"
    if is_random:
        fingerprint = random_weights.random_fingerprint(seed, info.config_digest, gguf=True)
        return ModelSource(spec, info.path, source, fingerprint, architecture, True, seed, gguf=info, model_cache=cache)
    # The conversion's version is part of the identity: vectors from an older conversion are not
    # the same model's (version 1 left tied embeddings to random initialisation).
    fingerprint = f"gguf:{info.quantization}:sha256:{info.sha256[:32]}:conversion-v{gguf.CONVERSION_VERSION}"
    return ModelSource(spec, info.path, source, fingerprint, architecture, gguf=info, model_cache=cache)


def spec_from_choice(kind: str, value: str, *, control: bool = False, seed: int = 0) -> str:
    """The spec for what a user picked or typed for a kind of source (the Extract page), made
    the ``@random`` control with ``seed`` when ``control``.

    Args:
        kind: a kind's name (:data:`SOURCE_KINDS`).
        value: what the user picked or typed.
        control: the same architecture with seeded random weights.
        seed: the control's seed.
    """
    if kind not in KINDS_BY_NAME:
        raise ModelLoadError(f"unknown kind of model source {kind!r}: use one of {', '.join(KINDS_BY_NAME)}")
    value = (value or "").strip()
    chosen = KINDS_BY_NAME[kind]
    if not value:
        raise ModelLoadError(f"no model chosen: give {chosen.hint}")
    spec = chosen.spec_from_choice(value)
    return random_weights.with_random(spec, seed) if control else spec


def spec_for_source(source: str) -> str | None:
    """The spec that loads a stored model's weights again from its recorded ``KIND:VALUE``
    source; None for an import or weights no longer at hand.

    Args:
        source: the stored model's ``source`` (``KIND:VALUE``).
    """
    kind, _, value = source.partition(":")
    if kind not in KINDS_BY_NAME or not value:
        return None
    return KINDS_BY_NAME[kind].spec_from_source(value)
