"""Frequency sources: named tables of (number, count), each with its provenance.

Built in, usable without being stored:

- ``wordfreq`` (the default): an *estimate* from the wordfreq package,
  ``word_frequency(str(n), "en")`` per number, as occurrences per billion words (rounded). wordfreq
  does not count multi-digit numbers one by one: it bins every digit string by its length
  (digits replaced by 0) and spreads the bin's frequency by a Benford's-law estimate of the first
  digit (plus a model of years for 4 digits), so e.g. 123 and 187 get the same estimate.
- ``openwebtext-500k``: the paper's own counts of 1..1000 in the first 500,000 OpenWebText
  documents (Cacioli, arXiv 2604.04469, Appendix E), packaged as ``magdash/data`` CSV with its
  provenance lines.

Stored in the store (saved, loaded and listed by :mod:`magdash.runs.frequency_runs`):
counts of a user's corpus (:func:`magdash.frequency.corpus.count_corpus`) and CSV imports
(:func:`read_counts_csv`). Built-in names cannot be used for stored sources.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import io
import os
import time
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from magdash.frequency.corpus import CorpusCounts, FrequencyError

WORDFREQ = "wordfreq"
OPENWEBTEXT = "openwebtext-500k"
BUILTIN_SOURCES = (WORDFREQ, OPENWEBTEXT)
DEFAULT_SOURCE = WORDFREQ
WORDFREQ_SCALE = 1e9
MAX_CSV_VALUE = 2**53
"""Numbers and counts of a CSV are read as floats (so ``12.0`` is 12): beyond 2**53 they lose digits."""
MAX_SOURCE_NAME = 100
_OPENWEBTEXT_FILE = "openwebtext_integer_counts.csv"
WORDFREQ_NOTE = (
    "estimate, not a count: wordfreq bins multi-digit numbers by their number of digits and "
    "spreads each bin by a Benford's-law guess of the first digit (years get their own model), "
    "so numbers such as 123 and 187 share one value"
)


@dataclass(frozen=True)
class FrequencySource:
    """A named table of counts. ``counts`` has int64 columns number (unique, ascending) and count.

    Attributes:
        name: the source's name.
        counts: int64 columns number (unique, ascending) and count.
        provenance: where the counts come from (corpus, files, rule, date).
        builtin: whether magdash ships it.
    """

    name: str
    counts: pd.DataFrame
    provenance: dict
    builtin: bool = False

    @property
    def total(self) -> int:
        """The sum of the counts, exact (:func:`exact_total`)."""
        return exact_total(self.counts["count"])

    def count_series(self) -> pd.Series:
        """Counts indexed by number."""
        return pd.Series(self.counts["count"].to_numpy(), index=self.counts["number"].to_numpy(), name="count")


def exact_total(counts) -> int:
    """The sum of integer ``counts`` as a Python int: exact however large (an int64 sum wraps
    silently: 1,999 counts of 2**53 summed to a negative total).

    Args:
        counts: integer counts (an array, a Series or a sequence).
    """
    return sum(int(value) for value in np.asarray(counts).tolist())


# -- built-ins -----------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _wordfreq_source() -> FrequencySource:
    import importlib.metadata

    from wordfreq import word_frequency

    numbers = np.arange(1, 1001, dtype=np.int64)
    counts = np.array([round(word_frequency(str(n), "en") * WORDFREQ_SCALE) for n in numbers], dtype=np.int64)
    provenance = {
        "kind": "builtin",
        "method": f"wordfreq word_frequency(str(n), 'en') x {WORDFREQ_SCALE:.0e}, rounded: occurrences per billion words",
        "wordfreq_version": importlib.metadata.version("wordfreq"),
        "number_range": [1, 1000],
        "note": WORDFREQ_NOTE,
    }
    return FrequencySource(WORDFREQ, pd.DataFrame({"number": numbers, "count": counts}), provenance, builtin=True)


@lru_cache(maxsize=1)
def _openwebtext_source() -> FrequencySource:
    text = importlib.resources.files("magdash").joinpath("data", _OPENWEBTEXT_FILE).read_text(encoding="utf-8")
    source = read_counts_csv(io.StringIO(text), name=OPENWEBTEXT, origin=f"magdash/data/{_OPENWEBTEXT_FILE}")
    provenance = {
        **source.provenance,
        "kind": "builtin",
        "corpus": "OpenWebText, first 500,000 documents",
        "documents": 500_000,
        "number_range": [1, 1000],
        "note": "the paper's counts (arXiv 2604.04469, Appendix E): " + " ".join(source.provenance["comments"]),
    }
    return FrequencySource(OPENWEBTEXT, source.counts, provenance, builtin=True)


def builtin_source(name: str) -> FrequencySource:
    if name == WORDFREQ:
        return _wordfreq_source()
    if name == OPENWEBTEXT:
        return _openwebtext_source()
    raise FrequencyError(f"{name!r} is not a built-in source; built-ins are {', '.join(BUILTIN_SOURCES)}")


# -- CSV -----------------------------------------------------------------------------------


def read_counts_csv(data, *, name: str, origin: str | None = None) -> FrequencySource:
    """Validate a CSV with columns number,count (a path, text/binary file object or bytes).

    Lines starting with ``#`` are comments; they are kept in the provenance (``comments``).
    Numbers must be distinct integers >= 0, counts integers >= 0 with a positive total; values
    such as ``12.0`` are accepted as integers. Every problem is reported with its CSV line.
    """
    raw, origin = _read_bytes(data, origin)
    if b"\0" in raw:
        raise FrequencyError(f"{origin}: looks binary, not a CSV; give a text file with a header line number,count")
    text = raw.decode("utf-8-sig", errors="replace")
    comments = [line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")]
    try:
        frame = pd.read_csv(io.StringIO(text), comment="#", dtype=str, skip_blank_lines=True, keep_default_na=False)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as error:
        raise FrequencyError(f"{origin}: not a readable CSV ({str(error).splitlines()[0]}); write a header line number,count") from None
    if not isinstance(frame.index, pd.RangeIndex):  # pandas took the surplus leading fields as an index
        raise FrequencyError(
            f"{origin}: line {_first_data_line(text)} has more fields than the header; give one number and one "
            "count per line, without thousands separators (1000, not 1,000)"
        )
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    missing = [c for c in ("number", "count") if c not in frame.columns]
    if missing:
        raise FrequencyError(
            f"{origin}: missing column(s) {', '.join(missing)}; the CSV needs a header line number,count "
            f"(found: {', '.join(frame.columns) or 'nothing'})"
        )
    if frame.empty:
        raise FrequencyError(f"{origin}: the CSV has a header but no rows")
    first_data_line = _first_data_line(text)
    numbers = _integer_column(frame["number"], "number", origin, first_data_line)
    counts = _integer_column(frame["count"], "count", origin, first_data_line)
    for label, values in (("number", numbers), ("count", counts)):
        negative = np.flatnonzero(values < 0)
        if negative.size:
            raise FrequencyError(
                f"{origin}: negative {label} {values[negative[0]]} on line {first_data_line + negative[0]}; "
                f"{label}s must be >= 0"
            )
    duplicated = pd.Series(numbers).duplicated()
    if duplicated.any():
        row = int(np.flatnonzero(duplicated.to_numpy())[0])
        raise FrequencyError(f"{origin}: number {numbers[row]} appears twice (again on line {first_data_line + row})")
    if not (counts > 0).any():  # not a sum: one of 64-bit counts can wrap to 0
        raise FrequencyError(f"{origin}: every count is 0; a source needs at least one positive count")
    order = np.argsort(numbers, kind="stable")
    table = pd.DataFrame({"number": numbers[order], "count": counts[order]})
    provenance = {
        "kind": "csv",
        "file": origin,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "rows": len(table),
        "comments": comments,
        "imported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "note": f"imported from {origin}" + (f": {' '.join(comments)}" if comments else ""),
    }
    return FrequencySource(name, table, provenance)


def _read_bytes(data, origin: str | None) -> tuple[bytes, str]:
    if isinstance(data, bytes):
        return data, origin or "uploaded CSV"
    if isinstance(data, (str, os.PathLike)):
        try:
            with open(data, "rb") as handle:
                return handle.read(), origin or os.fspath(data)
        except OSError as error:
            raise FrequencyError(f"cannot read {os.fspath(data)!r}: {error.strerror or error}") from None
    content = data.read()
    label = origin or getattr(data, "name", None) or "uploaded CSV"
    return (content.encode("utf-8") if isinstance(content, str) else content), str(label)


def _first_data_line(text: str) -> int:
    """1-based line number of the first data row (after comments, blank lines and the header)."""
    header_seen = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        if header_seen:
            return number
        header_seen = True
    return 0


def _integer_column(values: pd.Series, label: str, origin: str, first_line: int) -> np.ndarray:
    cleaned = values.str.strip()
    numeric = pd.to_numeric(cleaned, errors="coerce")
    bad = numeric.isna() | ~np.isfinite(numeric) | (numeric != np.round(numeric))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise FrequencyError(
            f"{origin}: {label} {cleaned.iloc[row]!r} on line {first_line + row} is not an integer; "
            f"every {label} must be a whole number"
        )
    huge = numeric.abs() > MAX_CSV_VALUE
    if huge.any():
        row = int(np.flatnonzero(huge.to_numpy())[0])
        raise FrequencyError(
            f"{origin}: {label} {cleaned.iloc[row][:30]!r} on line {first_line + row} is too large; "
            f"use whole numbers up to {MAX_CSV_VALUE:,}"
        )
    return numeric.to_numpy(dtype=np.float64).astype(np.int64)


# -- names and listings ----------------------------------------------------------------------


def check_source_name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise FrequencyError("a frequency source needs a name")
    if name in BUILTIN_SOURCES:
        raise FrequencyError(f"{name!r} is a built-in source; choose another name")
    if len(name) > MAX_SOURCE_NAME:
        raise FrequencyError(f"a frequency source name of {len(name):,} characters: use at most {MAX_SOURCE_NAME}")
    return name


def corpus_source(counted: CorpusCounts, name: str) -> FrequencySource:
    return FrequencySource(check_source_name(name), counted.counts, counted.provenance())


def listing_row(name: str, n_numbers: int, total: int, provenance: dict) -> dict:
    return {
        "name": name, "kind": provenance.get("kind", "unknown"), "n_numbers": n_numbers, "total": total,
        "note": provenance.get("note", ""), "provenance": provenance,
    }


def counts_table(source: FrequencySource | pd.DataFrame | pd.Series | dict) -> pd.DataFrame:
    """number, count, proportion (of the table's total), log_count = ln(count + 1)."""
    series = as_count_series(source)
    total = exact_total(series)
    return pd.DataFrame({
        "number": series.index.to_numpy(dtype=np.int64),
        "count": series.to_numpy(dtype=np.int64),
        "proportion": series.to_numpy(dtype=np.float64) / float(total) if total > 0 else np.nan,
        "log_count": np.log1p(series.to_numpy(dtype=np.float64)),
    })


def as_count_series(counts: FrequencySource | pd.DataFrame | pd.Series | dict) -> pd.Series:
    """Counts as an int64 Series indexed by number (ascending)."""
    if isinstance(counts, FrequencySource):
        series = counts.count_series()
    elif isinstance(counts, pd.DataFrame):
        if not {"number", "count"} <= set(counts.columns):
            raise FrequencyError("a counts table needs columns number and count")
        series = pd.Series(counts["count"].to_numpy(), index=counts["number"].to_numpy())
    elif isinstance(counts, pd.Series):
        series = counts.copy()
    elif isinstance(counts, dict):
        series = pd.Series(counts, dtype="float64")
    else:
        raise FrequencyError(f"cannot read counts from {type(counts).__name__}")
    series.index = pd.Index(np.asarray(series.index, dtype=np.int64), name="number")
    values = pd.to_numeric(series, errors="coerce")
    finite = np.isfinite(values.to_numpy(dtype=np.float64, na_value=np.nan))
    if not finite.all() or (values < 0).any() or (values != np.round(values)).any():
        raise FrequencyError("counts must be whole numbers >= 0")
    return values.astype(np.int64).sort_index().rename("count")
