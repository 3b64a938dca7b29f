"""What the dashboard may open and change: the folders its stores may be in, and read-only mode.

A dashboard takes store paths from its sidebar and from its URL (``?store=``), and a URL can
come from anyone who can reach the server or send a link to one of its users. So the app opens
only stores inside its **allowed folders**: the folder of the store it was started on
(``$MAGDASH_STORE``, else ``cache/``) and those listed in ``$MAGDASH_STORE_FOLDERS``
(separated by ``os.pathsep``). A path is checked after ``..`` segments and symbolic links are
resolved, so neither leads out. Opening never creates a store: only the first run and the
Extract page do, when asked, inside those folders.

``MAGDASH_READ_ONLY=1`` serves a lab's results: stores are attached read-only, nothing is
extracted, imported, uploaded or kept (analyses are computed and shown, not cached), and the
pages that would write say why.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from magdash.errors import StoreError
from magdash.store import default_store_path

STORE_FOLDERS_ENV = "MAGDASH_STORE_FOLDERS"
READ_ONLY_ENV = "MAGDASH_READ_ONLY"
_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class StoreAccess:
    """The dashboard's allowed folders (resolved) and whether it may write."""

    folders: tuple[Path, ...]
    read_only: bool

    def describe(self) -> str:
        return ", ".join(str(folder) for folder in self.folders)


def store_access(environ: Mapping[str, str] | None = None) -> StoreAccess:
    """The access the environment grants (read when the app runs, so a restart applies a change).

    Args:
        environ: the environment to read (``os.environ`` when None).
    """
    environ = os.environ if environ is None else environ
    configured = Path(environ.get("MAGDASH_STORE") or default_store_path())
    folders = [configured.parent]
    folders += [Path(entry) for entry in environ.get(STORE_FOLDERS_ENV, "").split(os.pathsep) if entry.strip()]
    resolved = tuple(dict.fromkeys(Path(os.path.realpath(folder)) for folder in folders))
    return StoreAccess(resolved, environ.get(READ_ONLY_ENV, "").strip().lower() in _TRUE)


def check_store_path(path: str, access: StoreAccess) -> Path:
    """``path`` resolved (``..`` and symbolic links), if it lies inside an allowed folder.

    Args:
        path: a store path from the sidebar or the URL, relative to the server's folder or absolute.
        access: the dashboard's :class:`StoreAccess`.

    Raises:
        StoreError: outside every allowed folder, or not a usable path, with what to do.
    """
    shown = path if len(path) <= 120 else path[:117] + "..."
    try:
        resolved = Path(os.path.realpath(path))
        str(resolved).encode("utf-8")
    except (OSError, ValueError, UnicodeError):
        raise StoreError(f"cannot use {shown!r} as a store path; give a path such as cache/magdash.duckdb") from None
    if not any(resolved.is_relative_to(folder) for folder in access.folders):
        raise StoreError(
            f"this dashboard opens stores only inside {access.describe()}; {shown!r} is outside "
            f"(it resolves to {str(resolved)!r}). To open it, restart the dashboard with its folder in "
            f"${STORE_FOLDERS_ENV}"
        )
    return resolved


def read_only_reason(what: str) -> str:
    """Why a page does not ``what`` (e.g. "extract models") in read-only mode."""
    return (f"This dashboard is read-only (${READ_ONLY_ENV}): it does not {what}. Results are computed "
            "and shown but nothing is stored; run the CLI, or a dashboard without read-only mode, to write.")
