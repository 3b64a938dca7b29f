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
pages that would write say why. Its viewers may be anyone the server reaches, so what it tells
them keeps the server's layout to itself: no traceback (:data:`SERVED_ERROR_DETAILS`), and
messages name paths relative to the allowed folder, never the server's absolute paths, its
working directory, where a link points or a process id (:func:`served_text`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from magdash.errors import StoreError
from magdash.store import default_store_path

STORE_FOLDERS_ENV = "MAGDASH_STORE_FOLDERS"
READ_ONLY_ENV = "MAGDASH_READ_ONLY"
_TRUE = ("1", "true", "yes", "on")

SERVED_ERROR_DETAILS = "none"
"""Streamlit's ``client.showErrorDetails`` in read-only mode: an unexpected error shows a generic
message in the browser, and its type, text and traceback go to the server's log only."""


@dataclass(frozen=True)
class StoreAccess:
    """The dashboard's allowed folders (resolved) and whether it may write."""

    folders: tuple[Path, ...]
    read_only: bool
    spellings: tuple[str, ...] = ()
    """Every way the allowed folders were written (as configured, absolute, resolved), longest first:
    :func:`served_text` takes each off the front of a path."""

    def describe(self) -> str:
        """The allowed folders as a message names them (in read-only mode, not where they are)."""
        if self.read_only:
            return "its store's folder" + (" and the folders of $" + STORE_FOLDERS_ENV if len(self.folders) > 1 else "")
        return ", ".join(str(folder) for folder in self.folders)


def store_access(environ: dict[str, str] | None = None) -> StoreAccess:
    """The access the environment grants (read when the app runs, so a restart applies a change).

    Args:
        environ: the environment to read (``os.environ`` when None).
    """
    environ = os.environ if environ is None else environ
    configured = Path(environ.get("MAGDASH_STORE") or default_store_path())
    folders = [configured.parent]
    folders += [Path(entry) for entry in environ.get(STORE_FOLDERS_ENV, "").split(os.pathsep) if entry.strip()]
    resolved = tuple(dict.fromkeys(Path(os.path.realpath(folder)) for folder in folders))
    written = {str(form) for folder in folders for form in (folder, os.path.abspath(folder), os.path.realpath(folder))}
    spellings = tuple(sorted((form for form in written if form not in (".", os.sep)), key=len, reverse=True))
    return StoreAccess(resolved, environ.get(READ_ONLY_ENV, "").strip().lower() in _TRUE, spellings)


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
        if access.read_only:  # served: neither the allowed folders nor where a link leads are told
            raise StoreError(f"this dashboard opens stores only inside {access.describe()}; {shown!r} is outside")
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


_PROCESS_ID = re.compile(r"\b(pid|PID|process|Process)(\s*[:=#]?\s*)\d+")


def served_text(text: str, access: StoreAccess, cwd: str | None = None) -> str:
    """``text`` (a message for the browser) as a read-only dashboard shows it: a path inside an
    allowed folder relative to it, the working directory taken off the front of a path, and
    process ids (DuckDB names the process holding a lock) left out. Outside read-only mode,
    ``text`` as it is: the local user is the server's owner.

    Args:
        text: the message.
        access: the dashboard's :class:`StoreAccess`.
        cwd: the working directory (the process's when None).
    """
    if not access.read_only:
        return text
    working = (cwd or os.getcwd()).rstrip(os.sep)
    for folder in (*access.spellings, *([working] if working else [])):
        text = _within(folder.rstrip(os.sep)).sub(lambda match: "" if match.group(1) else ".", text)
    return _PROCESS_ID.sub(lambda match: f"{match.group(1)}{match.group(2)}(id withheld)", text)


def _within(folder: str) -> re.Pattern[str]:
    """``folder`` where it begins a path (not inside a longer name): with the separator after it
    (group 1, taken off with the folder) or at the path's end."""
    name = r"[^\s'\"/]"
    return re.compile(rf"(?<!{name})(?<!/){re.escape(folder)}(?:({re.escape(os.sep)})|(?!{name}))")
