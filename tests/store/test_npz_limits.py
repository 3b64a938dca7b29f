"""An npz import reads only the layout's members, and only sizes its shapes need (issue 45).

A valid file plus a large member of zeros compressed small once peaked at twice the member's size:
every member was read in full. Each file here is about 200 MB of zeros when read, 200 KB on disk.
"""

from __future__ import annotations

import re
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from magdash.errors import StoreError
from magdash.store import read_npz

ZEROS = 200 * 2**20
"""The bytes of zeros a hostile member holds when decompressed."""
MEMORY_LIMIT = 20 * 2**20
"""What reading any of these files may allocate at its peak (its real arrays are a few KB)."""


def _valid(path: Path) -> Path:
    rng = np.random.default_rng(0)
    np.savez(path, per_carrier=rng.normal(size=(4, 2, 3, 8)).astype(np.float32), magnitudes=np.arange(1, 5))
    return path


def _add_zeros(path: Path, member: str, header_shape: tuple[int, ...], zeros: int = ZEROS) -> Path:
    """Append ``member``: an int32 .npy header of ``header_shape`` followed by ``zeros`` zero bytes, deflated."""
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive, \
            archive.open(member, "w", force_zip64=True) as out:
        np.lib.format.write_array_header_1_0(
            out, {"descr": "<i4", "fortran_order": False, "shape": header_shape})
        chunk = bytes(1 << 22)
        for start in range(0, zeros, len(chunk)):
            out.write(chunk[: min(len(chunk), zeros - start)])
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("npz-limits")
    return {
        # a member the layout does not name: never read
        "unnamed": _add_zeros(_valid(folder / "unnamed.npz"), "junk.npy", (ZEROS // 4,)),
        # magnitudes whose shape states 50 million values for per_carrier's 4 rows
        "too many magnitudes": _add_zeros(_add_carriers(folder / "magnitudes.npz"), "magnitudes.npy", (ZEROS // 4,)),
        # magnitudes whose header states 4 values, followed by 200 MB its shape does not need
        "more bytes than the shape": _add_zeros(_add_carriers(folder / "trailing.npz"), "magnitudes.npy", (4,)),
    }


def _add_carriers(path: Path) -> Path:
    np.savez(path, per_carrier=np.ones((4, 2, 3, 8), np.float32))
    return path


def _peak(read) -> tuple[object, int]:
    tracemalloc.start()
    try:
        try:
            outcome = read()
        except StoreError as error:
            outcome = error
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_member_the_layout_does_not_name_is_never_read(files):
    assert files["unnamed"].stat().st_size < 2 * 2**20
    arrays, peak = _peak(lambda: read_npz(files["unnamed"]))
    assert set(arrays) == {"per_carrier", "magnitudes"} and arrays["per_carrier"].shape == (4, 2, 3, 8)
    assert peak < MEMORY_LIMIT, f"reading peaked at {peak / 2**20:.0f} MB"


@pytest.mark.parametrize(("case", "says"), [
    ("too many magnitudes", r"magnitudes holds 209,715,200 bytes .*more than per_carrier's shape \(4, 2, 3, 8\) needs"),
    ("more bytes than the shape", r"magnitudes declares 209,715,328 bytes but its shape \(4,\) of int32 needs 144"),
])
def test_a_member_larger_than_its_shapes_need_is_refused_before_it_is_read(files, case, says):
    error, peak = _peak(lambda: read_npz(files[case]))
    assert isinstance(error, StoreError), error
    assert str(error).startswith(f"{str(files[case])!r}: ") and re.search(says, str(error)), error
    assert peak < MEMORY_LIMIT, f"refusing peaked at {peak / 2**20:.0f} MB"
