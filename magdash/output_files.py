"""The files a user asks magdash to write (exports, reports): never over something else.

An output is written under a temporary name beside its path, fsynced and renamed into place, so
an interrupted write leaves the old file (or nothing) and never half a file. What is already at
the path is looked at first, without opening anything that could block: a folder, a device, a
FIFO, a socket or a symbolic link is refused, and so is a regular file that is not an earlier
output of the same kind (``ours``): magdash replaces only what it wrote.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from magdash.errors import MagdashError

REPORT_MARK = 'id="magdash-manifest"'
"""Every HTML report magdash writes holds its run manifest under this id."""


def _kind_of(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return kind
    return "not a regular file"


def check_output_path(path: str | os.PathLike, *, what: str, ours: Callable[[Path], bool]) -> Path:
    """``path`` if ``what`` (e.g. "the export") may be written there; a MagdashError saying why not.

    Args:
        path: where the user asked for the output.
        what: the output, for messages.
        ours: whether an existing regular file is an earlier output of this kind (then it is replaced).
    """
    target = Path(path)
    shown = repr(str(target) if len(str(target)) <= 120 else str(target)[:117] + "...")
    try:
        status = os.lstat(target)
    except FileNotFoundError:
        status = None
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or "not a usable file name"
        raise MagdashError(f"cannot write {what} to {shown} ({reason})") from None
    if status is not None:
        if not stat.S_ISREG(status.st_mode):
            raise MagdashError(f"cannot write {what} to {shown}: it is {_kind_of(status.st_mode)}; "
                               "magdash has not touched it: give a new file name")
        if not ours(target):
            raise MagdashError(f"{shown} exists and is not {what} magdash wrote; magdash has not changed it: "
                               "give a new file name, or remove the file yourself")
    parent = target.parent
    if not parent.is_dir():
        raise MagdashError(f"cannot write {what} to {shown}: its folder {str(parent)!r} does not exist (or is a file)")
    return target


def write_output(path: str | os.PathLike, write: Callable[[Path], object], *, what: str,
                 ours: Callable[[Path], bool]) -> Path:
    """Write an output through ``write(temporary_path)``, then rename it into place.

    Args:
        path: where the user asked for it (checked by :func:`check_output_path`).
        write: writes the whole output to the path it is given.
        what: the output, for messages ("the export", "the report").
        ours: see :func:`check_output_path`.
    """
    target = check_output_path(path, what=what, ours=ours)
    temporary = target.with_name(f".{target.name}.writing-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        write(temporary)
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except OSError as error:
        raise MagdashError(f"cannot write {what} to {str(target)!r}: {error.strerror or error}") from None
    finally:
        with suppress(OSError):
            temporary.unlink()
    with suppress(OSError):
        descriptor = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    return target


def is_npz_export(path: Path) -> bool:
    """An npz holding ``per_carrier`` (what ``magdash export`` writes)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            return "per_carrier.npy" in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def is_report(path: Path) -> bool:
    """An HTML report of magdash's (it holds the run manifest)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return text.startswith("<!DOCTYPE html>") and REPORT_MARK in text
