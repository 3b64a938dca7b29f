"""Counting numbers in a user's corpus with DuckDB, streaming (memory independent of corpus size).

Inputs, one file or many (paths or globs; ``fmt="auto"`` looks at each file's first bytes and
name):

- plain text and gzip text: read by Python in pieces of about 1 MiB, always cut after a newline,
  and handed to DuckDB as an Arrow stream, so memory holds a few pieces (and at least the
  longest line) whatever the corpus size. A *document* is one line, or with ``paragraphs=True``
  one block of lines separated by blank lines. Blank (whitespace-only) lines are no documents.
  Text must be UTF-8; ``encoding_errors="replace"`` reads bad bytes as U+FFFD instead of failing.
- JSONL (also ``.json``, ``.ndjson``, gzip-compressed or not): DuckDB ``read_json``; every record
  whose text field (``text_field``, default ``"text"``) is present and not null is a document.
- Parquet: DuckDB ``read_parquet``; every row whose text column is not null is a document.

Only DuckDB's in-memory engine runs here (``duckdb.connect(":memory:")``); it never opens the
store. The rule itself is in :mod:`magdash.frequency.rule`: RE2 extracts the candidate tokens,
the group-by keeps one row per distinct token, and Python converts the few distinct tokens.
"""

from __future__ import annotations

import glob
import gzip
import json
import logging
import os
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa

from magdash.errors import AnalysisError
from magdash.frequency.rule import (
    BLANK_LINE,
    DIGIT_RUN,
    DIGIT_TOKEN,
    DIGIT_TOKEN_SENTENCE_FINAL,
    NUMBER_WORDS,
    PAPER_PATTERN,
    PARAGRAPH_BREAK,
    number_word_values,
)
from magdash.params import ProgressCallback

log = logging.getLogger(__name__)

FORMATS = ("auto", "text", "gzip", "jsonl", "parquet")
DEFAULT_RANGE = (1, 1000)
PIECE_BYTES = 1 << 20
PIECES_PER_BATCH = 16
MAX_JSON_OBJECT_BYTES = 1 << 30

_GZIP_MAGIC = b"\x1f\x8b"
_PARQUET_MAGIC = b"PAR1"
_JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")
_PARQUET_SUFFIXES = (".parquet", ".pq")
# Marker tokens that share the group-by with the number tokens (numbers never start with @ or #).
_DOCUMENT = "@doc"
_NO_TEXT = "@none"
_WORDS_PREFIX = "#"


class FrequencyError(AnalysisError):
    """A corpus, CSV or frequency source that cannot be used, with what to do about it."""


@dataclass(frozen=True)
class CountOptions:
    """How numbers are counted. The defaults are the paper's rule exactly."""

    number_range: tuple[int, int] = DEFAULT_RANGE  # inclusive; numbers outside are only "seen"
    sentence_final: bool = False  # also "in 2020." (see magdash.frequency.rule)
    words: bool = False  # also English number words ("twenty-one", "one hundred")
    paragraphs: bool = False  # plain text: a document is a blank-line-separated block, not a line
    text_field: str = "text"  # JSONL field / Parquet column holding the text
    fmt: str = "auto"  # one of FORMATS, for every file
    encoding_errors: str = "strict"  # plain text that is not UTF-8: "strict" fails, "replace" reads U+FFFD

    def __post_init__(self) -> None:
        low, high = self.number_range
        if not (0 <= low <= high):
            raise FrequencyError(f"the number range {low}-{high} must satisfy 0 <= low <= high")
        if self.fmt not in FORMATS:
            raise FrequencyError(f"unknown format {self.fmt!r}; use one of {', '.join(FORMATS)}")
        if self.encoding_errors not in ("strict", "replace"):
            raise FrequencyError("encoding_errors must be 'strict' or 'replace'")
        if not self.text_field:
            raise FrequencyError("the text field name must not be empty")

    def rule_description(self) -> str:
        parts = [f"paper rule {PAPER_PATTERN}, values {self.number_range[0]}..{self.number_range[1]}"]
        if self.sentence_final:
            parts.append("plus sentence-final numbers (digits followed by one '.')")
        if self.words:
            parts.append("plus English number words")
        return "; ".join(parts)


@dataclass(frozen=True)
class CorpusFile:
    path: str
    fmt: str  # text, gzip, jsonl, parquet
    compressed: bool
    size: int


@dataclass(frozen=True)
class CorpusCounts:
    """Counts of every number in the range (zeros included) and what was read."""

    counts: pd.DataFrame  # number int64, count int64, one row per number of the range
    documents: int
    numbers_seen: int  # every number the rule found, inside the range or not
    files: tuple[CorpusFile, ...]
    options: CountOptions
    seconds: float
    records_without_text: int = 0
    unit: str = "line"

    @property
    def numbers_in_range(self) -> int:
        return int(self.counts["count"].sum())

    @property
    def bytes_read(self) -> int:
        return sum(f.size for f in self.files)

    def to_json(self) -> dict:
        """The CLI's JSON: ``{"counts": {"1": int, ...}, "documents": int, "numbers_seen": int}``."""
        return {
            "counts": {str(int(n)): int(c) for n, c in zip(self.counts["number"], self.counts["count"], strict=True)},
            "documents": int(self.documents),
            "numbers_seen": int(self.numbers_seen),
            "numbers_in_range": self.numbers_in_range,
        }

    def provenance(self) -> dict:
        return {
            "kind": "corpus",
            "rule": self.options.rule_description(),
            "number_range": list(self.options.number_range),
            "sentence_final": self.options.sentence_final,
            "words": self.options.words,
            "document": self.unit,
            "text_field": self.options.text_field if any(f.fmt in ("jsonl", "parquet") for f in self.files) else None,
            "files": [{"path": f.path, "format": f.fmt, "bytes": f.size} for f in self.files],
            "documents": int(self.documents),
            "numbers_seen": int(self.numbers_seen),
            "numbers_in_range": self.numbers_in_range,
            "counted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "note": (
                f"counted by magdash in {self.documents:,} documents ({self.unit}s) of "
                f"{len(self.files)} file(s); {self.options.rule_description()}"
            ),
        }




def expand_inputs(patterns: Sequence[str | os.PathLike]) -> list[Path]:
    """Files named by paths or glob patterns (``**`` recurses), in order, without duplicates."""
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    found: dict[str, Path] = {}
    for pattern in patterns:
        text = os.fspath(pattern)
        if glob.has_magic(text):
            matches = sorted(p for p in glob.glob(text, recursive=True) if os.path.isfile(p))
            if not matches:
                raise FrequencyError(f"no file matches {text!r}")
            for match in matches:
                found.setdefault(os.path.abspath(match), Path(match))
        elif os.path.isdir(text):
            raise FrequencyError(f"{text!r} is a folder; name its files, e.g. '{os.path.join(text, '*.txt')}'")
        elif not os.path.isfile(text):
            raise FrequencyError(f"no such file: {text!r}")
        else:
            found.setdefault(os.path.abspath(text), Path(text))
    if not found:
        raise FrequencyError("no input files given")
    return list(found.values())


def detect_format(path: Path, fmt: str = "auto") -> CorpusFile:
    """Decide how to read ``path``: the magic bytes decide compression, the name decides JSONL."""
    with open(path, "rb") as handle:
        head = handle.read(4)
    gzipped = head[:2] == _GZIP_MAGIC
    name = path.name.lower()
    stem = name[:-3] if name.endswith(".gz") else name
    size = path.stat().st_size
    if fmt == "auto":
        if head == _PARQUET_MAGIC or name.endswith(_PARQUET_SUFFIXES):
            fmt = "parquet"
        elif stem.endswith(_JSON_SUFFIXES):
            fmt = "jsonl"
        else:
            fmt = "gzip" if gzipped else "text"
    if fmt == "parquet" and head != _PARQUET_MAGIC:
        raise FrequencyError(f"{path} is not a Parquet file (it does not start with PAR1)")
    if fmt == "text" and gzipped:
        raise FrequencyError(f"{path} is gzip-compressed; use format 'gzip' (or 'auto')")
    if fmt == "gzip" and not gzipped:
        raise FrequencyError(f"{path} is not gzip-compressed; use format 'text' (or 'auto')")
    return CorpusFile(path=str(path), fmt=fmt, compressed=gzipped, size=size)


def count_corpus(
    inputs: Sequence[str | os.PathLike] | str | os.PathLike,
    options: CountOptions | None = None,
    *,
    threads: int | None = None,
    progress: ProgressCallback | None = None,
) -> CorpusCounts:
    """Count the numbers of ``options.number_range`` in the files (paths or globs).

    Raises :class:`FrequencyError` when the corpus has no document or no number in the range.
    ``progress(bytes_done, bytes_total)`` is called after each file.
    """
    options = options or CountOptions()
    if threads is not None and threads < 1:
        raise FrequencyError(f"threads must be at least 1, got {threads} (leave it out to use every core)")
    files = [detect_format(path, options.fmt) for path in expand_inputs(inputs)]
    started = time.perf_counter()
    tally = _Tally(options)
    total_bytes = sum(f.size for f in files)
    done_bytes = 0
    with duckdb.connect(":memory:") as connection:
        if threads is not None:
            connection.execute(f"SET threads = {int(threads)}")
        connection.execute("SET preserve_insertion_order = false")
        for corpus_file in files:
            if corpus_file.fmt in ("text", "gzip"):
                _count_text_file(connection, corpus_file, options, tally)
            elif corpus_file.fmt == "jsonl":
                _count_json_file(connection, corpus_file, options, tally)
            else:
                _count_parquet_file(connection, corpus_file, options, tally)
            done_bytes += corpus_file.size
            if progress is not None:
                progress(done_bytes, total_bytes)
    seconds = time.perf_counter() - started
    unit = _document_unit(files, options)
    where = f"{len(files)} file(s): {', '.join(f.path for f in files[:3])}{' ...' if len(files) > 3 else ''}"
    if tally.documents == 0:
        hint = ""
        if tally.records_without_text:
            hint = f"; {tally.records_without_text:,} records have no {options.text_field!r} field (see text_field=)"
        raise FrequencyError(f"no documents in {where}: the corpus is empty{hint}")
    counts = tally.counts_frame()
    if counts["count"].sum() == 0:
        low, high = options.number_range
        raise FrequencyError(
            f"no numbers {low}..{high} in {tally.documents:,} documents ({unit}s) of {where} "
            f"({tally.numbers_seen:,} found outside it); check the files, the format and the range"
        )
    log.info("counted %s documents, %s numbers in %.1f s", tally.documents, tally.numbers_seen, seconds)
    return CorpusCounts(
        counts=counts, documents=tally.documents, numbers_seen=tally.numbers_seen, files=tuple(files),
        options=options, seconds=seconds, records_without_text=tally.records_without_text, unit=unit,
    )


def _document_unit(files: Sequence[CorpusFile], options: CountOptions) -> str:
    kinds = {"row" if f.fmt in ("jsonl", "parquet") else ("paragraph" if options.paragraphs else "line") for f in files}
    return kinds.pop() if len(kinds) == 1 else "mixed: " + "/".join(sorted(kinds))


class _Tally:
    """Sums the (token, count) rows of each file's query into counts per number."""

    def __init__(self, options: CountOptions):
        self.options = options
        self.by_number: dict[int, int] = {}
        self.documents = 0
        self.numbers_seen = 0
        self.records_without_text = 0

    def add(self, rows: list[tuple[str, int]]) -> None:
        for token, count in rows:
            if token == _DOCUMENT:
                self.documents += count
            elif token == _NO_TEXT:
                self.records_without_text += count
            elif token.startswith(_WORDS_PREFIX):
                for value in number_word_values(token[len(_WORDS_PREFIX):]):
                    self._add_number(value, count)
            else:
                # int() reads decimal digits of every script, as in the paper's Python code.
                self._add_number(int(token.rstrip(".")), count)

    def _add_number(self, value: int, count: int) -> None:
        self.numbers_seen += count
        low, high = self.options.number_range
        if low <= value <= high:
            self.by_number[value] = self.by_number.get(value, 0) + count

    def counts_frame(self) -> pd.DataFrame:
        low, high = self.options.number_range
        numbers = pd.RangeIndex(low, high + 1)
        counts = pd.Series(self.by_number, dtype="int64").reindex(numbers, fill_value=0)
        return pd.DataFrame({"number": numbers.to_numpy(dtype="int64"), "count": counts.to_numpy(dtype="int64")})


def _token_query(documents_sql: str, options: CountOptions, *, blank_is_document: bool) -> str:
    """One pass over ``documents_sql`` (a query with a VARCHAR column ``doc``): (token, n) rows."""
    token = DIGIT_TOKEN_SENTENCE_FINAL if options.sentence_final else DIGIT_TOKEN
    lists = [f"list_filter(regexp_extract_all(doc, '{DIGIT_RUN}'), lambda t: regexp_full_match(t, '{token}'))"]
    if options.words:
        lists.append(
            f"list_transform(regexp_extract_all(doc, '{NUMBER_WORDS}', 0, 'i'), lambda t: '{_WORDS_PREFIX}' || t)"
        )
    is_document = "doc IS NOT NULL" if blank_is_document else f"NOT regexp_full_match(doc, '{BLANK_LINE}')"
    lists.append(
        f"CASE WHEN doc IS NULL THEN ['{_NO_TEXT}'] WHEN {is_document} THEN ['{_DOCUMENT}'] ELSE []::VARCHAR[] END"
    )
    combined = lists[0]
    for extra in lists[1:]:
        combined = f"list_concat({combined}, {extra})"
    return f"SELECT token, count(*) AS n FROM (SELECT unnest({combined}) AS token FROM ({documents_sql})) GROUP BY token"


def _run(connection: duckdb.DuckDBPyConnection, sql: str, params: list | None, what: str) -> list[tuple[str, int]]:
    try:
        return connection.execute(sql, params or []).fetchall()
    except duckdb.Error as error:
        raise FrequencyError(f"cannot read {what}: {str(error).splitlines()[0]}") from None


# -- plain and gzip text -----------------------------------------------------------------


class _TextStream:
    """Pieces of one text file as Arrow batches, with the paragraph bookkeeping at piece cuts."""

    def __init__(self, corpus_file: CorpusFile, options: CountOptions):
        self.file = corpus_file
        self.options = options
        self.error: Exception | None = None
        # A paragraph cut in two by a piece boundary is counted once in each piece; this many
        # documents are subtracted afterwards.
        self.split_paragraphs = 0

    def batches(self) -> Iterator[pa.RecordBatch]:
        pending: list[bytes] = []
        offsets: list[int] = []
        try:
            for offset, piece in self._pieces():
                pending.append(piece)
                offsets.append(offset)
                if len(pending) == PIECES_PER_BATCH:
                    yield self._batch(pending, offsets)
                    pending, offsets = [], []
            if pending:
                yield self._batch(pending, offsets)
        except FrequencyError as error:
            self.error = error
            raise
        except (OSError, EOFError, zlib.error) as error:
            self.error = FrequencyError(f"cannot read {self.file.path}: {error}")
            raise

    def _open(self):
        return gzip.open(self.file.path, "rb") if self.file.compressed else open(self.file.path, "rb")

    def _pieces(self) -> Iterator[tuple[int, bytes]]:
        previous_last_line_blank = True
        offset = 0
        # The start of a line longer than a chunk, kept as a list so a long line is joined once.
        unfinished: list[bytes] = []
        with self._open() as handle:
            while chunk := handle.read(PIECE_BYTES):
                cut = chunk.rfind(b"\n")
                if cut < 0:
                    unfinished.append(chunk)
                    continue
                piece = b"".join([*unfinished, chunk[: cut + 1]]) if unfinished else chunk[: cut + 1]
                unfinished = [chunk[cut + 1 :]] if cut + 1 < len(chunk) else []
                previous_last_line_blank = self._track_paragraphs(piece, previous_last_line_blank)
                yield offset, piece
                offset += len(piece)
        if unfinished:
            piece = b"".join(unfinished)
            self._track_paragraphs(piece, previous_last_line_blank)
            yield offset, piece

    def _track_paragraphs(self, piece: bytes, previous_last_line_blank: bool) -> bool:
        """Note a paragraph that runs across the cut before ``piece``; return whether its last line is blank."""
        if not self.options.paragraphs:
            return True
        first_end = piece.find(b"\n")
        first_line = piece if first_end < 0 else piece[:first_end]
        if not previous_last_line_blank and not _is_blank(first_line):
            self.split_paragraphs += 1
        body = piece[:-1] if piece.endswith(b"\n") else piece
        return _is_blank(body[body.rfind(b"\n") + 1 :])

    def _batch(self, pieces: list[bytes], offsets: list[int]) -> pa.RecordBatch:
        binary = pa.array(pieces, type=pa.large_binary())
        try:
            text = binary.cast(pa.large_string())
        except pa.ArrowInvalid:
            if self.options.encoding_errors == "replace":
                text = pa.array([p.decode("utf-8", "replace") for p in pieces], type=pa.large_string())
            else:
                raise self._encoding_error(pieces, offsets) from None
        return pa.record_batch([text], names=["piece"])

    def _encoding_error(self, pieces: list[bytes], offsets: list[int]) -> FrequencyError:
        for piece, offset in zip(pieces, offsets, strict=True):
            try:
                piece.decode("utf-8")
            except UnicodeDecodeError as error:
                where = offset + error.start
                return FrequencyError(
                    f"{self.file.path} is not UTF-8 text (bad byte at offset {where:,}"
                    f"{' of the decompressed text' if self.file.compressed else ''}); convert it to UTF-8 "
                    "or read bad bytes as U+FFFD (encoding_errors='replace')",
                    parameters=("encoding_errors",),
                )
        return FrequencyError(f"{self.file.path} is not UTF-8 text")


def _is_blank(line: bytes) -> bool:
    return not line.decode("utf-8", "replace").strip()


def _count_text_file(connection, corpus_file: CorpusFile, options: CountOptions, tally: _Tally) -> None:
    stream = _TextStream(corpus_file, options)
    reader = pa.RecordBatchReader.from_batches(pa.schema([("piece", pa.large_string())]), stream.batches())
    split = (
        f"regexp_split_to_array(piece, '{PARAGRAPH_BREAK}')" if options.paragraphs else "string_split(piece, chr(10))"
    )
    sql = _token_query(f"SELECT unnest({split}) AS doc FROM text_pieces", options, blank_is_document=False)
    connection.register("text_pieces", reader)
    try:
        rows = connection.execute(sql).fetchall()
    except duckdb.Error as error:
        if stream.error is not None:
            raise stream.error from None
        raise FrequencyError(f"cannot read {corpus_file.path}: {str(error).splitlines()[0]}") from None
    finally:
        connection.unregister("text_pieces")
    tally.add(rows)
    tally.documents -= stream.split_paragraphs


# -- JSONL and Parquet ---------------------------------------------------------------------


def _quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _first_json_record(corpus_file: CorpusFile) -> object | None:
    """The first record of a JSON-lines file, or None when it cannot be read on its own line."""
    opener = gzip.open if corpus_file.compressed else open
    try:
        with opener(corpus_file.path, "rt", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.strip():
                    return json.loads(line)
    except (OSError, ValueError, EOFError):
        return None
    return None


def _count_json_file(connection, corpus_file: CorpusFile, options: CountOptions, tally: _Tally) -> None:
    first = _first_json_record(corpus_file)
    if isinstance(first, dict) and options.text_field not in first:
        fields = ", ".join(sorted(map(str, first))[:20]) or "none"
        raise FrequencyError(
            f"{corpus_file.path}: the first record has no field {options.text_field!r} "
            f"(its fields: {fields}); name the text field with text_field=",
            parameters=("text_field",),
        )
    compression = "gzip" if corpus_file.compressed else "none"
    documents = (
        f"SELECT {_quote_identifier(options.text_field)} AS doc FROM read_json(?, columns = ?, "
        f"format = 'auto', compression = '{compression}', maximum_object_size = {MAX_JSON_OBJECT_BYTES})"
    )
    sql = _token_query(documents, options, blank_is_document=True)
    rows = _run(connection, sql, [corpus_file.path, {options.text_field: "VARCHAR"}], corpus_file.path)
    tally.add(rows)


def _count_parquet_file(connection, corpus_file: CorpusFile, options: CountOptions, tally: _Tally) -> None:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(corpus_file.path)
    except (OSError, pa.ArrowException) as error:
        raise FrequencyError(f"cannot read Parquet file {corpus_file.path}: {error}") from None
    if options.text_field not in schema.names:
        raise FrequencyError(
            f"{corpus_file.path} has no column {options.text_field!r} (its columns: "
            f"{', '.join(schema.names[:20])}); name the text column with text_field=",
            parameters=("text_field",),
        )
    column_type = schema.field(options.text_field).type
    if not (pa.types.is_string(column_type) or pa.types.is_large_string(column_type) or pa.types.is_string_view(column_type)):
        raise FrequencyError(
            f"column {options.text_field!r} of {corpus_file.path} holds {column_type}, not text; "
            "name the text column with text_field=",
            parameters=("text_field",),
        )
    documents = f"SELECT {_quote_identifier(options.text_field)} AS doc FROM read_parquet(?)"
    sql = _token_query(documents, options, blank_is_document=True)
    tally.add(_run(connection, sql, [corpus_file.path], corpus_file.path))
