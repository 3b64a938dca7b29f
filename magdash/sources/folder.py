"""A local folder holding a Hugging Face model: ``config.json``, a tokenizer and ``*.safetensors``.

Pickle checkpoints are refused unless the user allows them (:func:`magdash.sources.base.weight_files`);
a folder holding no ``config.json`` but exactly one GGUF file is the GGUF kind's
(:mod:`magdash.sources.gguf`), which the resolver asks first.
"""

from __future__ import annotations

from pathlib import Path

from magdash.errors import MagdashError
from magdash.sources.base import Located, SourceKind, existing_path


def _locate(base: str, _model_cache: Path) -> Located | None:
    path = existing_path(base)
    return Located(path, f"folder:{path}") if path is not None else None


def _spec_from_choice(value: str) -> str:
    path = Path(value).expanduser()
    try:
        is_folder, is_file = path.is_dir(), path.is_file()
    except OSError as error:  # e.g. a name too long for the file system
        raise MagdashError(f"cannot use {value!r} as a folder ({error.strerror}): give the folder holding "
                           "config.json and *.safetensors") from None
    if is_file:
        raise MagdashError(f"{value!r} is a file, not a folder: give the folder holding config.json and "
                           "*.safetensors (a .gguf file is a GGUF file)")
    if not is_folder:
        raise MagdashError(f"folder {value!r} does not exist: give the folder holding config.json and *.safetensors")
    return str(path.resolve())


def _spec_from_source(value: str) -> str | None:
    return value if Path(value).is_dir() else None


KIND = SourceKind(
    name="folder",
    label="Local folder",
    hint="a folder holding config.json and *.safetensors",
    example="/models/Meta-Llama-3-8B",
    locate=_locate,
    spec_from_choice=_spec_from_choice,
    spec_from_source=_spec_from_source,
)
"""Your own weights on disk, as Hugging Face saves them."""
