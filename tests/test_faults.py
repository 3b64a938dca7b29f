"""Faults during extraction: SIGKILL at random points, a full disk, running out of memory.

Every fault must leave a store that opens and is consistent (one row per item in ``done`` and
in every layer's vector table, vectors only for done items), and a resumed run must end with
exactly the store of a clean run: the same rows everywhere and bitwise-equal vectors.

The child processes run ``tests/fault_child.py``, which flushes every batch (so kills land
inside write transactions often), logs its phases for the parent, and can limit the file size
(a full disk without root) or the address space (running out of memory).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import random
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest

from magdash.errors import MagdashError
from magdash.stimuli import PAPER_CARRIERS, StimulusSet, parse_magnitudes
from magdash.store import Store
from magdash.store.shards import shard_files, shard_folder

pytestmark = pytest.mark.faults

REPO = Path(__file__).resolve().parents[1]
SET_NAME = "faults"
MAGNITUDES = "1-100"  # x the paper's 5 carriers = 500 sentences
BATCH = 8
STIMULI = StimulusSet(SET_NAME, PAPER_CARRIERS, tuple(parse_magnitudes(MAGNITUDES)))
N_ITEMS = len(STIMULI.items)
KILLS = 20
CHILD_TIMEOUT_S = 300


# -- child processes -----------------------------------------------------------------------


def _extract_args(model: Path, store: Path, *, batch: int = BATCH, magnitudes: str = MAGNITUDES) -> list[str]:
    return [
        "extract", "--model", str(model), "--stimuli", SET_NAME, "--magnitudes", magnitudes,
        "--batch-size", str(batch), "--device", "cpu", "--quiet", "--store", str(store),
    ]


def _child_command(args: list[str], *, events: Path | None = None, fsize: int | None = None,
                   as_headroom: int | None = None) -> list[str]:
    command = [sys.executable, "-m", "tests.fault_child"]
    if events is not None:
        command += ["--events", str(events)]
    if fsize is not None:
        command += ["--fsize", str(fsize)]
    if as_headroom is not None:
        command += ["--as-headroom", str(as_headroom)]
    return command + ["--", *args]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return env


def _run_child(args: list[str], **options) -> subprocess.CompletedProcess:
    return subprocess.run(
        _child_command(args, **options), cwd=REPO, env=_child_env(), capture_output=True, text=True,
        timeout=CHILD_TIMEOUT_S,
    )


class _ForkedChild:
    """A child forked by the warm server (``python -m tests.fault_child --serve``), with what
    :func:`_run_and_kill` asks of a :class:`subprocess.Popen`: poll, wait, send_signal, kill."""

    def __init__(self, server: subprocess.Popen, argv: list[str], log: Path):
        self._server = server
        server.stdin.write(json.dumps({"argv": argv, "log": str(log)}).encode() + b"\n")
        server.stdin.flush()
        self.pid = self._answer(CHILD_TIMEOUT_S)["pid"]
        self.returncode: int | None = None

    def _answer(self, timeout: float) -> dict:
        # Byte by byte from the unbuffered pipe, so no answer waits in a buffer select cannot see.
        ready, _, _ = select.select([self._server.stdout], [], [], timeout)
        if not ready:
            raise subprocess.TimeoutExpired("fault_child --serve", timeout)
        line = b""
        while not line.endswith(b"\n"):
            byte = os.read(self._server.stdout.fileno(), 1)
            assert byte, f"the fault server ended: rc {self._server.poll()}"
            line += byte
        return json.loads(line)

    def poll(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.returncode = self._answer(0)["returncode"]
        return self.returncode

    def wait(self, timeout: float) -> int:
        if self.returncode is None:
            self.returncode = self._answer(timeout)["returncode"]
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # not reaped yet, so the pid is still this child's
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


@pytest.fixture(scope="module")
def fault_server():
    """One warm interpreter that forks the killed children (tests/fault_child.py's ``--serve``)."""
    server = subprocess.Popen([sys.executable, "-m", "tests.fault_child", "--serve"], cwd=REPO, env=_child_env(),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    try:
        yield server
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _read_events(path: Path) -> list[tuple[float, str, str]]:
    """(wall time, event, argument) per line the child wrote; a torn last line is left out."""
    if not path.exists():
        return []
    events = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2:
            events.append((float(parts[0]), parts[1], parts[2] if len(parts) > 2 else ""))
    return events


# -- reading stores (only while no child runs) ------------------------------------------------


def _done_count(path: Path) -> int:
    if not path.exists():
        return 0
    with duckdb.connect(str(path), read_only=True) as connection:
        tables = {r[0] for r in connection.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if "done" not in tables:
            return 0
        return connection.execute("SELECT count(*) FROM done").fetchone()[0]


def _snapshot(path: Path) -> dict[str, list[tuple]]:
    """Every table's rows, sorted, without timestamps nor where the vectors are (read-only).

    Which shard and row hold an item depends on where the kills cut the batches, so ``shards``
    and those ``done`` columns are left out; the vectors themselves are compared bit for bit.
    """
    snapshot = {}
    with duckdb.connect(str(path), read_only=True) as connection:
        tables = [r[0] for r in connection.execute(
            "SELECT table_name FROM duckdb_tables() WHERE table_name <> 'shards' ORDER BY table_name").fetchall()]
        for table in tables:
            columns = [r[0] for r in connection.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = ? "
                "AND data_type NOT LIKE 'TIMESTAMP%' AND column_name NOT IN ('shard', 'row_index') "
                "ORDER BY column_index", [table]).fetchall()]
            listed = ", ".join(f'"{c}"' for c in columns)
            snapshot[table] = connection.execute(f'SELECT {listed} FROM "{table}" ORDER BY ALL').fetchall()
    return snapshot


def _consistency_problems(path: Path, *, swept: bool = True) -> list[str]:
    """What is inconsistent in a store: duplicates, ``done`` rows whose vectors are not in a
    registered shard, shards that are not what the catalog says, and (once a process has opened
    the store since the last kill, ``swept``) shard files no transaction registered."""
    problems = []
    with duckdb.connect(str(path), read_only=True) as connection:
        total, distinct, places = connection.execute(
            "SELECT count(*), count(DISTINCT (model_id, item_key)), count(DISTINCT (shard, row_index)) FROM done"
        ).fetchone()
        if total != distinct:
            problems.append(f"done has {total} rows for {distinct} items")
        if total != places:
            problems.append(f"done has {total} rows for {places} stored vectors")
        orphans = connection.execute(
            "SELECT count(*) FROM done WHERE item_key NOT IN (SELECT item_key FROM stimulus_items)").fetchone()[0]
        if orphans:
            problems.append(f"{orphans} done rows name no stimulus item")
        unplaced = connection.execute(
            "SELECT count(*) FROM done d LEFT JOIN shards s USING (shard) "
            "WHERE s.shard IS NULL OR d.row_index >= s.n_rows OR s.model_id <> d.model_id").fetchone()[0]
        if unplaced:
            problems.append(f"{unplaced} done rows point outside a registered shard of their model")
        registered = connection.execute("SELECT shard, n_rows FROM shards").fetchall()
    folder = shard_folder(path)
    for shard, n_rows in registered:
        if not (folder / shard).exists():
            problems.append(f"registered shard {shard} is not on disk")
        elif pq.ParquetFile(folder / shard).metadata.num_rows != n_rows:
            problems.append(f"registered shard {shard} does not hold its {n_rows} rows")
    unregistered = set(shard_files(folder)) - {shard for shard, _ in registered}
    if swept and unregistered:
        problems.append(f"{len(unregistered)} shard files no transaction registered: {sorted(unregistered)}")
    return problems


def _assert_same_as_clean(clean: Path, other: Path, context: str = "") -> None:
    """Same rows in every table, one row per item everywhere, and bitwise-equal vectors."""
    assert _consistency_problems(other) == [], context
    expected, got = _snapshot(clean), _snapshot(other)
    assert sorted(got) == sorted(expected), f"tables differ {context}"
    for table in expected:
        assert len(got[table]) == len(expected[table]), f"{table}: {len(got[table])} rows, clean has {len(expected[table])} {context}"
        assert got[table] == expected[table], f"{table} differs from the clean run {context}"
    with duckdb.connect(str(other), read_only=True) as connection:
        assert connection.execute("SELECT count(*) FROM done").fetchone()[0] == N_ITEMS, context
    clean_store, other_store = Store(clean), Store(other)
    (name,) = clean_store.model_names()
    assert other_store.model_names() == [name]
    for a, b in zip(clean_store.read_layers(name, SET_NAME), other_store.read_layers(name, SET_NAME), strict=True):
        assert a.vectors.shape == b.vectors.shape == (len(STIMULI.magnitudes), len(STIMULI.carriers), a.vectors.shape[2])
        assert np.array_equal(a.vectors.view(np.uint32), b.vectors.view(np.uint32)), f"layer {a.layer} {context}"
    exported_a, exported_b = clean_store.export_arrays(name, SET_NAME), other_store.export_arrays(name, SET_NAME)
    assert np.array_equal(exported_a["per_carrier"].view(np.uint32), exported_b["per_carrier"].view(np.uint32))


# -- the clean run ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clean_store(tiny_llama, tmp_path_factory) -> Path:
    """The clean run's store, extracted in this process (child processes give the same bits)."""
    from magdash.extraction import extract

    path = tmp_path_factory.mktemp("clean") / "clean.duckdb"
    result = extract(str(tiny_llama), STIMULI, Store(path), batch_size=BATCH, device="cpu")
    assert (result.extracted, result.already_stored) == (N_ITEMS, 0)
    assert _consistency_problems(path) == []
    assert _done_count(path) == N_ITEMS
    return path


# -- SIGKILL ------------------------------------------------------------------------------------
#
# Every kill is placed by the child's own events, never by how long a step takes, so where the
# kills land is the same on a quiet machine and a busy one:
# * aimed kills: the child SIGKILLs itself on a named event (start-up, model load, inside the
#   N-th write transaction before a given layer's insert, just after the N-th commit), and the
#   test checks exactly what the store must hold after each;
# * timed kills: the parent sends SIGKILL a random delay after a random event, for points no
#   event names (the interpreter's start, imports, the middle of a forward pass or a commit).
#   The child stops itself at a later event, so the kill lands no later than there, whatever
#   the delay; only the store's accounting is checked for these.

STARTUP_EVENTS = ("start", "load-begin", "loaded")

# How long each phase of a child usually takes until children have been timed; timed kills
# draw their delay from these, so a busy machine only moves where inside the phase they land.
_DEFAULT_GAPS = {"popen": 0.15, "start": 0.8, "load-begin": 4.0, "loaded": 0.3, "write-begin": 0.05}


class _PhaseTimes:
    """Lengths of the phases after each anchor event, measured on the children so far."""

    def __init__(self):
        self.samples: dict[str, list[float]] = {anchor: [] for anchor in _DEFAULT_GAPS}

    def gap(self, anchor: str) -> float:
        samples = self.samples[anchor]
        return float(np.median(samples)) if samples else _DEFAULT_GAPS[anchor]

    def learn(self, started: float, events: list[tuple[float, str, str]]) -> None:
        first = {}
        for t, name, _ in events:
            first.setdefault(name, t)
        begins = [t for t, name, _ in events if name == "write-begin"]
        ends = [t for t, name, _ in events if name == "write-end"]
        if "start" in first:
            self.samples["popen"].append(first["start"] - started)
        if "start" in first and "load-begin" in first:
            self.samples["start"].append(first["load-begin"] - first["start"])
        if "load-begin" in first and "loaded" in first:
            self.samples["load-begin"].append(first["loaded"] - first["load-begin"])
        if "loaded" in first and ends:
            self.samples["loaded"].append(ends[0] - first["loaded"])
        self.samples["write-begin"] += [end - begin for begin, end in zip(begins, ends, strict=False)]


@dataclasses.dataclass(frozen=True)
class _Kill:
    """Where one kill is aimed. ``die_at`` for an aimed kill, ``anchor`` and ``delay`` for a timed one."""

    kind: str  # "startup", "in-write", "after-commit" or "timed"
    die_at: str | None = None
    halt_at: str | None = None
    anchor: str | None = None
    delay: float = 0.0

    def describe(self) -> str:
        if self.die_at:
            return f"{self.kind} at {self.die_at}"
        return f"{self.kind} {self.anchor} + {round(self.delay * 1000)} ms (halt at {self.halt_at})"


def _kill_plan(rng: random.Random) -> list[str]:
    """The kinds of the 20 kills: start-up first (nothing stored yet), then a commit, so every
    later kill is mid-run; the rest shuffled."""
    startup = list(STARTUP_EVENTS)
    rng.shuffle(startup)
    rest = ["in-write"] * 5 + ["after-commit"] * 3 + ["startup"] * 2 + ["timed"] * (KILLS - 14)
    rng.shuffle(rest)
    return [f"startup:{name}" for name in startup] + ["after-commit"] + rest


# Where a write can be killed "in-write" (tests/fault_child.py): its shard being written, its
# shard renamed but not registered, its registration's transaction open.
IN_WRITE_POINTS = 3


def _aim(kind: str, rng: random.Random, writes_left: int, kills_left: int, phases: _PhaseTimes) -> _Kill:
    """Place a kill of ``kind`` so that it leaves at least one write for the runs after it."""
    # Up to about twice this kill's share of the writes that are left, never the last one.
    most = max(1, min(writes_left - 1, round(2 * writes_left / kills_left)))
    if kind.startswith("startup"):
        event = kind.partition(":")[2] or rng.choice(STARTUP_EVENTS)
        return _Kill("startup", die_at=f"{event}#1")
    if kind == "in-write":
        write, point = rng.randint(1, most), rng.randrange(IN_WRITE_POINTS)
        return _Kill("in-write", die_at=f"in-write#{(write - 1) * IN_WRITE_POINTS + point + 1}")
    if kind == "after-commit":
        return _Kill("after-commit", die_at=f"write-end#{rng.randint(1, most)}")
    anchor = rng.choice(["popen", *STARTUP_EVENTS, "write-begin"])
    count = rng.randint(1, most) if anchor == "write-begin" else 1
    halt = f"write-end#{count if anchor == 'write-begin' else 1}"
    delay = rng.random() * phases.gap(anchor)
    return _Kill("timed", halt_at=halt, anchor=f"{anchor}#{count}", delay=delay)


def _run_and_kill(server: subprocess.Popen, args: list[str], kill: _Kill, events: Path, log: Path) -> dict:
    """Run a child forked by ``server`` with ``kill`` in place and wait until it is dead; what happened."""
    command = _child_command(args, events=events)
    command[command.index("--"):command.index("--")] = (
        ["--die-at", kill.die_at] if kill.die_at else ["--halt-at", kill.halt_at])
    argv = command[command.index("tests.fault_child") + 1:]
    started = time.time()
    process = _ForkedChild(server, argv, log)
    try:
        if kill.anchor is not None:
            anchor, _, count = kill.anchor.partition("#")
            deadline = time.monotonic() + CHILD_TIMEOUT_S
            while anchor != "popen" and process.poll() is None and time.monotonic() < deadline:
                if sum(name == anchor for _, name, _ in _read_events(events)) >= int(count):
                    break
                time.sleep(0.005)
            time.sleep(kill.delay)
            process.send_signal(signal.SIGKILL)  # a child stopped at its halt event dies too
        returncode = process.wait(timeout=CHILD_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(CHILD_TIMEOUT_S)
    seen = _read_events(events)
    return {
        "started": started, "rc": returncode, "events": seen, "writes": _writes(seen),
        "last": f"{seen[-1][1]} {seen[-1][2]}".strip() if seen else "interpreter",
        "output": log.read_text()[-2000:] if returncode != -signal.SIGKILL else "",
    }


def _writes(events: list[tuple[float, str, str]]) -> list[tuple[int, int | None]]:
    """(items handed to write_vectors, items it wrote or None when the write never ended) per write."""
    writes: list[tuple[int, int | None]] = []
    for _, name, argument in events:
        if name == "write-begin":
            writes.append((int(argument), None))
        elif name == "write-end" and writes:
            writes[-1] = (writes[-1][0], int(argument))
    return writes


def _accounting_problems(writes: list[tuple[int, int | None]], stored_before: int, stored_after: int) -> list[str]:
    """Did a run store only what was missing, each committed batch once?

    Every write that returned must have written all it was handed (``write_vectors`` skips
    items already stored, so fewer means the run redid stored work), and what the run added
    to the store is its returned writes, plus the last batch when the kill came after its commit.
    """
    problems = [f"wrote {w} of {h} handed" for h, w in writes if w is not None and w != h]
    returned = sum(w for _, w in writes if w is not None)
    unfinished = [h for h, w in writes if w is None]
    possible = {returned} | ({returned + unfinished[-1]} if unfinished else set())
    if len(unfinished) > 1 or stored_after - stored_before not in possible:
        problems.append(f"stored {stored_before} -> {stored_after} after writes {writes}")
    return problems


def _aimed_kill_problems(kill: _Kill, record: dict) -> list[str]:
    """What an aimed kill's store must show: the event it died on last, and exactly the commits
    before it (a write killed inside its transaction adds nothing)."""
    name, _, count = kill.die_at.partition("#")
    died_on = [event for event in record["events"] if event[1] == name]
    problems = []
    if len(died_on) != int(count) or record["events"][-1] != died_on[-1]:
        problems.append(f"did not die on its {count}th {name!r}: last event {record['last']!r}")
    committed = sum(w for _, w in record["writes"] if w is not None)
    if record["stored"] - record["stored_before"] != committed:
        problems.append(f"stored {record['stored_before']} -> {record['stored']} with {committed} committed")
    if kill.kind == "startup" and record["writes"]:
        problems.append(f"wrote before its start-up kill: {record['writes']}")
    if kill.kind == "in-write" and (not record["writes"] or record["writes"][-1][1] is not None):
        problems.append(f"was not inside a write: {record['writes']}")
    if kill.kind == "after-commit" and (not record["writes"] or record["writes"][-1][1] is None):
        problems.append(f"did not commit its last write: {record['writes']}")
    return problems


@pytest.mark.slow
def test_twenty_sigkills_and_resumes_give_exactly_the_clean_store(tiny_llama, clean_store, fault_server, tmp_path):
    rng = random.Random(20260405)
    store = tmp_path / "killed.duckdb"
    args = _extract_args(tiny_llama, store)
    phases = _PhaseTimes()
    kills, records = [], []
    for index, kind in enumerate(_kill_plan(rng)):
        stored = _done_count(store)
        kill = _aim(kind, rng, math.ceil((N_ITEMS - stored) / BATCH), KILLS - index, phases)
        record = _run_and_kill(fault_server, args, kill, tmp_path / f"kill{index:02d}.events", tmp_path / f"kill{index:02d}.log")
        record["stored_before"], record["stored"] = stored, _done_count(store)
        # Nothing registered is half-written, even before the next run sweeps the kill's leftovers.
        record["problems"] = _consistency_problems(store, swept=False) if store.exists() else []
        phases.learn(record["started"], record["events"])
        kills.append(kill)
        records.append(record)

    table = "\n".join(
        f"kill {i:2d}: {kill.describe():<48} last event {r['last']:<14} rc {r['rc']}, "
        f"stored {r['stored_before']} -> {r['stored']}" for i, (kill, r) in enumerate(zip(kills, records, strict=True))
    )
    (tmp_path / "kills.txt").write_text(table + "\n")  # kept by pytest for a look after the run
    crashed = [(i, r["rc"], r["output"]) for i, r in enumerate(records) if r["rc"] != -signal.SIGKILL]
    assert crashed == [], f"children that were not killed but ended on their own:\n{table}"
    for index, (kill, record) in enumerate(zip(kills, records, strict=True)):
        problems = record["problems"] + _accounting_problems(record["writes"], record["stored_before"], record["stored"])
        if kill.die_at:
            problems += _aimed_kill_problems(kill, record)
        assert problems == [], f"kill {index}: {problems}\n{table}"
    progress = [record["stored"] for record in records]
    assert progress[:3] == [0, 0, 0], f"the start-up kills stored something:\n{table}"
    assert all(0 < stored < N_ITEMS for stored in progress[3:]), f"a kill was not mid-run:\n{table}"
    assert progress == sorted(progress), f"a kill lost stored items:\n{table}"

    events = tmp_path / "final.events"
    final = _run_child(args, events=events)
    assert final.returncode == 0, final.stderr[-3000:]
    assert f"extracted {N_ITEMS - progress[-1]} sentences ({progress[-1]} were stored)" in final.stdout, final.stdout
    final_writes = _writes(_read_events(events))
    assert all(w is not None for _, w in final_writes), final_writes
    assert _accounting_problems(final_writes, progress[-1], N_ITEMS) == []
    _assert_same_as_clean(clean_store, store, context=f"\n{table}")


# A new store is written under a temporary name beside its path and linked into place once its
# tables are written, so a kill or a full disk during creation leaves only that temporary file
# (empty, or a DuckDB header cut short): never anything at the store's path. The next creation
# removes it, since no process holds it.


def _cut_header(tmp_path: Path) -> bytes:
    reference = tmp_path / "reference.duckdb"
    duckdb.connect(str(reference)).close()
    return reference.read_bytes()[:5000]


@pytest.mark.parametrize("leftover", ["empty file", "cut header"])
def test_a_creation_killed_half_way_leaves_nothing_at_the_path_and_is_cleaned_up(
        tiny_llama, clean_store, tmp_path, leftover, capsys):
    from magdash.cli import main

    path = tmp_path / "new.duckdb"
    abandoned = tmp_path / ".new.duckdb.creating-99999-0badc0de"
    abandoned.write_bytes(b"" if leftover == "empty file" else _cut_header(tmp_path))
    other = tmp_path / ".other.duckdb.creating-99999-0badc0de"  # another store's: not this one's to remove
    other.write_bytes(b"")
    returncode = main(_extract_args(tiny_llama, path))
    output = capsys.readouterr()
    assert returncode == 0, output.err
    assert f"extracted {N_ITEMS} sentences (0 were stored)" in output.out
    _assert_same_as_clean(clean_store, path, context=leftover)
    assert not abandoned.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if ".creating-" in p.name) == [other.name]


@pytest.mark.parametrize("content", [b"", b"my notes\n", b"\0" * 100, b"x" * 20_000, "cut header"])
def test_a_file_that_is_not_a_store_is_never_replaced(tmp_path, content):
    """Whatever its size, empty included: a file at the path that is not a store is refused untouched."""
    path = tmp_path / "notes.duckdb"
    path.write_bytes(_cut_header(tmp_path) if content == "cut header" else content)
    before = path.read_bytes()
    with pytest.raises(MagdashError):
        Store(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["notes.duckdb", *(
        ["reference.duckdb"] if content == "cut header" else [])])


# -- disk full ------------------------------------------------------------------------------------

_ERROR_LINE = re.compile(r"^magdash: error: .+")


def _assert_reports_disk_full(result: subprocess.CompletedProcess, *, new_store: bool = False) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    observed = f"rc {result.returncode}, stderr:\n{result.stderr[-4000:]}"
    assert result.returncode == 2, observed
    assert "Traceback" not in result.stderr, observed
    assert len(lines) == 1 and _ERROR_LINE.match(lines[0]), observed
    message = lines[0].lower()
    assert re.search(r"disk is full|disk full|no space|store could not be written|could not write (the )?store", message), observed
    if new_store:  # nothing existed, so nothing is said to be kept
        assert "nothing was created" in message and "kept" not in message, observed
    else:
        assert "kept" in message, observed  # what was stored is kept
    assert "free" in message or "--store" in message, observed  # what to do
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fsize", "when"),
    [
        # Bytes a file may hold. A new store (about 800 KB once its tables are checkpointed) is
        # written under a temporary name: its headers cannot be written, its tables cannot, or
        # its checkpoint cannot; nothing is left at the store's path (the next run creates it).
        (5_000, "creating the store"),
        (13_000, "creating the tables"),
        (400_000, "checkpointing the new store"),
        # A store made beforehand: DuckDB's checkpoints stop at the limit, the write-ahead log
        # (the catalog's rows, the vectors are in shards) grows to it mid-run.
        (100_000, "mid-run"),
    ],
)
def test_a_full_disk_is_reported_and_the_store_stays_usable(tiny_llama, clean_store, tmp_path, fsize, when, capsys):
    store = tmp_path / "full.duckdb"
    events = tmp_path / "full.events"
    args = _extract_args(tiny_llama, store)
    if when == "mid-run":
        Store(store)
    result = _run_child(args, events=events, fsize=fsize)
    _assert_reports_disk_full(result, new_store=when != "mid-run")
    writes = _writes(_read_events(events))
    stored = 0
    if when != "mid-run":  # nothing at the path, no temporary file left beside it
        assert sorted(p.name for p in tmp_path.iterdir()) == ["full.events"], result.stderr[-2000:]
    else:
        assert _consistency_problems(store) == [], f"{when}: {result.stderr[-2000:]}"
        stored = _done_count(store)
    if when == "mid-run":
        assert 0 < stored < N_ITEMS and any(written is None for _, written in writes), (stored, writes)
        assert stored == sum(written for _, written in writes if written is not None)
    # The store opens, and the same command without the limit carries on and completes.
    from magdash.cli import main

    returncode = main(args)
    output = capsys.readouterr()
    assert returncode == 0, output.err
    assert f"({stored} were stored)" in output.out
    _assert_same_as_clean(clean_store, store, context=when)


# -- out of memory ----------------------------------------------------------------------------------


def _failing_model(inner, fail_at: int, fault):
    """``inner`` whose ``fail_at``-th forward pass calls ``fault`` (which raises)."""
    import torch

    class FailingModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner, self.calls = inner, 0

        def forward(self, input_ids=None, attention_mask=None, position_ids=None):
            self.calls += 1
            if self.calls == fail_at:
                fault()
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids)

        def get_input_embeddings(self):
            return self.inner.get_input_embeddings()

    return FailingModel()


def _raise_memory_error():
    raise MemoryError()


def _raise_cpu_allocator_error():
    import torch

    torch.empty(1 << 50, dtype=torch.uint8)  # the real "DefaultCPUAllocator: can't allocate memory"


def _raise_torch_out_of_memory():
    import torch

    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.11 GiB total capacity)")


def _raise_other_runtime_error():
    raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (8x32 and 64x32)")


FAIL_AT = 3


@pytest.mark.parametrize(
    "fault", [_raise_memory_error, _raise_cpu_allocator_error, _raise_torch_out_of_memory],
    ids=["MemoryError", "DefaultCPUAllocator", "torch.OutOfMemoryError"],
)
def test_out_of_memory_in_a_forward_pass_is_reported_and_resumable(tiny_llama, clean_store, tmp_path, fault):
    from magdash.extraction import extract
    from magdash.sources import load_model

    loaded = load_model(str(tiny_llama), device="cpu")
    failing = dataclasses.replace(loaded, model=_failing_model(loaded.model, FAIL_AT, fault))
    store = Store(tmp_path / "oom.duckdb")
    with pytest.raises(MagdashError) as raised:
        extract(failing, STIMULI, store, batch_size=BATCH, device="cpu")
    message = str(raised.value)
    assert "out of memory" in message.lower() and "batch_size=" in message, message  # the API's parameter
    # The batches before the failing one are stored, nothing else.
    assert _done_count(store.path) == (FAIL_AT - 1) * BATCH
    assert _consistency_problems(store.path) == []
    resumed = extract(str(tiny_llama), STIMULI, store, batch_size=BATCH, device="cpu")
    assert (resumed.already_stored, resumed.extracted) == ((FAIL_AT - 1) * BATCH, N_ITEMS - (FAIL_AT - 1) * BATCH)
    _assert_same_as_clean(clean_store, store.path, context=fault.__name__)


def test_other_runtime_errors_are_not_reported_as_out_of_memory(tiny_llama, tmp_path):
    from magdash.extraction import extract
    from magdash.sources import load_model

    loaded = load_model(str(tiny_llama), device="cpu")
    failing = dataclasses.replace(loaded, model=_failing_model(loaded.model, FAIL_AT, _raise_other_runtime_error))
    store = Store(tmp_path / "bug.duckdb")
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        extract(failing, STIMULI, store, batch_size=BATCH, device="cpu")
    assert _done_count(store.path) == (FAIL_AT - 1) * BATCH
    assert _consistency_problems(store.path) == []


@pytest.mark.slow
def test_running_out_of_address_space_in_a_large_batch_is_reported(tmp_path):
    from tests.support import build_tiny_model

    # One block of width 1024: a batch of all 5,000 sentences needs an MLP activation of about
    # 5,000 x 8 tokens x 2,048 x 4 bytes = 330 MB, well above the 200 MB of headroom left
    # after the model is loaded (batches of 50 ran all 5,000 sentences within it when tried).
    model = build_tiny_model(tmp_path / "wide-llama", "llama", n_blocks=1, hidden=1024)
    store = tmp_path / "oom.duckdb"
    # The store exists first: the child limits its address space once the model is loaded, and
    # `extract` creates a new store only after that (a model that fails to load leaves no store).
    Store(store, create=True)
    args = _extract_args(model, store, batch=5000, magnitudes="1-1000")
    result = _run_child(args, as_headroom=200 << 20, events=tmp_path / "oom.events")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    observed = f"rc {result.returncode}, stderr:\n{result.stderr[-4000:]}"
    assert result.returncode == 2, observed
    assert "Traceback" not in result.stderr, observed
    assert len(lines) == 1 and _ERROR_LINE.match(lines[0]), observed
    assert "out of memory" in lines[0] and "--batch-size" in lines[0], observed
    assert any(name == "as-limit" for _, name, _ in _read_events(tmp_path / "oom.events"))
    Store(store)
    assert _consistency_problems(store) == []
    assert _done_count(store) == 0
