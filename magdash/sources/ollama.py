"""Models pulled with Ollama, named as Ollama names them (``ollama:llama3.2:1b``).

Ollama keeps a model as a manifest and content-addressed blobs under its models folder
(``$OLLAMA_MODELS``, default ``~/.ollama/models``)::

    manifests/registry.ollama.ai/library/llama3.2/1b     JSON: {"layers": [{"mediaType", "digest"}, ...]}
    blobs/sha256-<hex>                                    the layer with that digest

The layer of media type ``application/vnd.ollama.image.model`` is the GGUF file; magdash loads it
as any other GGUF (:mod:`magdash.sources.gguf`). Ollama itself need not be installed or running.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from magdash.errors import MagdashError, ModelLoadError
from magdash.sources.base import Located, SourceKind

OLLAMA_PREFIX = "ollama:"
OLLAMA_MODELS_ENV = "OLLAMA_MODELS"
DEFAULT_REGISTRY = "registry.ollama.ai"
DEFAULT_NAMESPACE = "library"
DEFAULT_TAG = "latest"
MODEL_MEDIA_TYPE = "application/vnd.ollama.image.model"


def ollama_models_dir() -> Path:
    return Path(os.environ.get(OLLAMA_MODELS_ENV) or Path.home() / ".ollama" / "models").expanduser()


def manifest_path(name: str, models_dir: Path) -> Path:
    """``llama3.2`` -> manifests/registry.ollama.ai/library/llama3.2/latest; ``me/mine:q4`` -> .../me/mine/q4."""
    reference, _, tag = name.rpartition(":") if ":" in name.rpartition("/")[2] else (name, "", "")
    parts = [part for part in reference.split("/") if part]
    if not parts or any(part in (".", "..") for part in parts) or len(parts) > 3 or (tag and "/" in tag):
        raise ModelLoadError(f"cannot read the Ollama name {name!r}: write ollama:NAME or ollama:NAME:TAG")
    if len(parts) == 1:
        parts = [DEFAULT_NAMESPACE, *parts]
    if len(parts) == 2:
        parts = [DEFAULT_REGISTRY, *parts]
    return models_dir / "manifests" / Path(*parts) / (tag or DEFAULT_TAG)


def resolve_ollama(name: str, models_dir: Path | None = None) -> Path:
    """The GGUF blob of an Ollama model, read from its manifest."""
    models_dir = models_dir or ollama_models_dir()
    if not models_dir.is_dir():
        raise ModelLoadError(
            f"no Ollama models folder at {str(models_dir)!r}: install Ollama and pull the model "
            f"(ollama pull {name}), or set ${OLLAMA_MODELS_ENV} to where your models are"
        )
    manifest = manifest_path(name, models_dir)
    try:
        layers = json.loads(manifest.read_text(encoding="utf-8")).get("layers", [])
    except FileNotFoundError:
        known = ", ".join(installed_models(models_dir)[:10]) or "none"
        raise ModelLoadError(
            f"Ollama has no model {name!r} in {str(models_dir)!r} (pull it with: ollama pull {name}); "
            f"models there: {known}"
        ) from None
    except (OSError, ValueError, AttributeError) as error:
        raise ModelLoadError(f"cannot read the Ollama manifest {str(manifest)!r}: {error}") from None
    digests = [layer.get("digest", "") for layer in layers if layer.get("mediaType") == MODEL_MEDIA_TYPE]
    if not digests:
        raise ModelLoadError(f"the Ollama manifest of {name!r} lists no model weights ({MODEL_MEDIA_TYPE})")
    algorithm, _, digest = digests[0].partition(":")
    if algorithm != "sha256" or not digest.isalnum():
        raise ModelLoadError(f"the Ollama manifest of {name!r} has an unreadable digest {digests[0]!r}")
    blob = models_dir / "blobs" / f"sha256-{digest}"
    if not blob.is_file():
        raise ModelLoadError(f"the weights of Ollama model {name!r} ({blob.name}) are missing: pull it again")
    return blob


def installed_models(models_dir: Path) -> list[str]:
    """Ollama names of the models in ``models_dir`` (library models by their short name)."""
    root = models_dir / "manifests"
    names = []
    for manifest in sorted(p for p in root.rglob("*") if p.is_file()):
        parts = manifest.relative_to(root).parts
        if len(parts) != 4:
            continue
        registry, namespace, model, tag = parts
        short = model if (registry, namespace) == (DEFAULT_REGISTRY, DEFAULT_NAMESPACE) else f"{namespace}/{model}"
        names.append(f"{short}:{tag}")
    return sorted(names)


def _locate(base: str, _model_cache: Path) -> Located | None:
    if not base.startswith(OLLAMA_PREFIX):
        return None
    return Located(resolve_ollama(base.removeprefix(OLLAMA_PREFIX)), base, is_gguf=True)


def _spec_from_choice(value: str) -> str:
    if not value:
        raise MagdashError("no model chosen: give an Ollama model name")
    return value if value.startswith(OLLAMA_PREFIX) else f"{OLLAMA_PREFIX}{value}"


def _spec_from_source(value: str) -> str | None:
    spec = f"{OLLAMA_PREFIX}{value}"
    try:
        resolve_ollama(value)
    except ModelLoadError:
        return None
    return spec


KIND = SourceKind(
    name="ollama",
    label="Ollama",
    hint="ollama:NAME[:TAG], a model pulled with Ollama (found in $OLLAMA_MODELS or ~/.ollama/models)",
    example="llama3.2:1b",
    locate=_locate,
    spec_from_choice=_spec_from_choice,
    spec_from_source=_spec_from_source,
)
"""Ollama's blobs are GGUF files named by their digest; Ollama itself need not run."""
