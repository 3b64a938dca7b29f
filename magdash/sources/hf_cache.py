"""A model already in the local Hugging Face cache, named by its repo id
(``meta-llama/Meta-Llama-3-8B``). Nothing is ever downloaded: a repo the cache lacks is not found.

The cache's snapshot names the commit, which identifies the weights without hashing them.
"""

from __future__ import annotations

import logging
from pathlib import Path

from magdash.errors import MagdashError
from magdash.sources.base import Located, SourceKind

log = logging.getLogger(__name__)


def cached_repo_ids() -> list[str]:
    """Model repo ids present in the local Hugging Face cache."""
    try:
        from huggingface_hub import scan_cache_dir

        info = scan_cache_dir()
    except Exception as error:  # noqa: BLE001 - a missing or unreadable cache just lists nothing
        log.info("no usable Hugging Face cache: %s", error)
        return []
    return sorted(repo.repo_id for repo in info.repos if repo.repo_type == "model")


def cached_snapshot(repo_id: str) -> Path | None:
    """The folder of ``repo_id``'s snapshot in the cache, or None when the cache lacks it."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception as error:  # noqa: BLE001 - any failure means "not in the cache"
        log.info("%s is not in the Hugging Face cache: %s", repo_id, error)
        return None


def _locate(base: str, _model_cache: Path) -> Located | None:
    snapshot = cached_snapshot(base)
    return Located(snapshot, f"hf-cache:{base}", snapshot.name) if snapshot is not None else None


def _spec_from_choice(value: str) -> str:
    if not value:
        raise MagdashError("no model chosen: give a model from the list")
    return value


KIND = SourceKind(
    name="hf-cache",
    label="Hugging Face cache",
    hint="the id of a model already in your Hugging Face cache (nothing is downloaded)",
    example="meta-llama/Meta-Llama-3-8B",
    locate=_locate,
    spec_from_choice=_spec_from_choice,
    spec_from_source=lambda value: value,
    choices=cached_repo_ids,
    nothing_to_choose="Your Hugging Face cache holds no models. magdash never downloads: fetch one on a machine "
                      "with internet (`hf download ORG/NAME`, huggingface_hub's command line), or give a local folder.",
)
"""Models fetched with ``hf download`` (huggingface_hub's command line) on a machine with internet."""
