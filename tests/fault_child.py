"""Child process for tests/test_faults.py: ``magdash`` run with faults prepared.

    python -m tests.fault_child [--events FILE] [--die-at EVENT[#N]] [--halt-at EVENT[#N]]
                                [--fsize BYTES] [--as-headroom BYTES] -- ARGS...

runs ``magdash ARGS...`` (the CLI's ``main``) with results flushed after every batch
(``FLUSH_SECONDS = 0``), and:

* ``--events FILE``: appends ``TIME EVENT [ARG]`` lines with unbuffered writes, so the parent
  can tell where the child was: ``start`` (before any import), ``load-begin``, ``loaded``,
  ``write-begin ITEMS`` (a batch handed to the store), ``in-write LAYER`` (inside the write
  transaction, before that layer's vectors are inserted) and ``write-end WRITTEN`` (committed);
* ``--die-at EVENT#N``: the child SIGKILLs itself on its N-th EVENT (default 1), right after
  logging it, so a kill lands exactly in the phase that event belongs to, however fast the
  machine is;
* ``--halt-at EVENT#N``: the child stops itself (SIGSTOP) on its N-th EVENT, so a kill the
  parent sends at a random moment lands no later than that point;
* ``--fsize BYTES``: no file may grow beyond BYTES (``RLIMIT_FSIZE``) and SIGXFSZ is ignored,
  so a write past it fails with EFBIG as on a full disk instead of killing the process;
* ``--as-headroom BYTES``: once the model is loaded, the address space is limited to what
  the process uses then plus BYTES (``RLIMIT_AS``), so a large batch runs out of memory.

The exit status is the CLI's.

    python -m tests.fault_child --serve

imports what a child imports once, then reads one JSON request per line on standard input
(``{"argv": [...], "log": FILE}``), forks a child that runs ``main(argv)`` with its output in
FILE, and answers ``{"pid": N}`` at once and ``{"returncode": N}`` when the child has ended
(``-9`` when SIGKILL ended it, as :class:`subprocess.Popen` says). The kills of
``tests/test_faults.py`` go to the forked child's own pid: it is the process that writes the
store, so it dies exactly as a fresh interpreter would, without paying torch's and
transformers' imports again for each of twenty children.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import signal
import sys
import time
import traceback


def _vm_size_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def _event_target(text: str | None) -> tuple[str, int] | None:
    if text is None:
        return None
    name, _, count = text.partition("#")
    return name, int(count or 1)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fault_child")
    parser.add_argument("--events")
    parser.add_argument("--die-at", type=_event_target)
    parser.add_argument("--halt-at", type=_event_target)
    parser.add_argument("--fsize", type=int)
    parser.add_argument("--as-headroom", type=int)
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    args = options.args[1:] if options.args[:1] == ["--"] else options.args

    events = None
    if options.events:
        events = os.open(options.events, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    seen: dict[str, int] = {}

    def event(name: str, argument: object = "") -> None:
        if events is not None:
            os.write(events, f"{time.time():.3f} {name} {argument}".rstrip().encode() + b"\n")
        seen[name] = seen.get(name, 0) + 1
        if options.die_at == (name, seen[name]):
            os.kill(os.getpid(), signal.SIGKILL)
        if options.halt_at == (name, seen[name]):
            os.kill(os.getpid(), signal.SIGSTOP)

    event("start")
    if options.fsize is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (options.fsize, options.fsize))

    import magdash.extraction as extraction
    import magdash.store.database
    import magdash.store.shards
    from magdash.cli import main as magdash_main
    from magdash.store import Store
    extraction.FLUSH_SECONDS = 0.0
    original_load = extraction.load_model
    original_write = Store.write_vectors
    original_table = magdash.store.shards._shard_table
    original_fsync_folder = magdash.store.shards._fsync_folder
    original_flag = magdash.store.database.insert_nonfinite

    def load_model(*a, **k):
        event("load-begin")
        loaded = original_load(*a, **k)
        event("loaded")
        if options.as_headroom is not None:
            limit = _vm_size_bytes() + options.as_headroom
            resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
            event("as-limit", limit)
        return loaded

    def write_vectors(self, model_id, item_keys, vectors, norms=None):
        event("write-begin", len(item_keys))
        written = original_write(self, model_id, item_keys, vectors, norms)
        event("write-end", written)
        return written

    # The three points of a write where a kill lands "in-write" (magdash.store.shards' protocol):
    # the partial shard file exists and is being written; the shard is renamed and flushed but
    # not registered; the registration's transaction is open.
    def shard_table(*a, **k):
        event("in-write", "writing")
        return original_table(*a, **k)

    def fsync_folder(folder):
        original_fsync_folder(folder)
        event("in-write", "renamed")

    def flag(*a, **k):
        event("in-write", "registering")
        return original_flag(*a, **k)

    magdash.store.shards._shard_table = shard_table
    magdash.store.shards._fsync_folder = fsync_folder
    magdash.store.database.insert_nonfinite = flag
    extraction.load_model = load_model
    Store.write_vectors = write_vectors
    return magdash_main(args)


# What main() and the CLI's extract import on their way, so a forked child finds them loaded.
PRELOAD = (
    "torch", "transformers", "transformers.models.llama.modeling_llama", "magdash.extraction", "magdash.store.database",
    "magdash.store.shards", "magdash.cli", "magdash.cli.extract_command", "magdash.sources",
)


def serve() -> None:
    """Fork one child per request line on standard input; answer its pid, then its return code."""
    for module in PRELOAD:
        importlib.import_module(module)
    while line := sys.stdin.readline():
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _run_forked(request["argv"], request["log"])
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), flush=True)


def _run_forked(argv: list[str], log: str) -> None:
    """The forked child: ``main(argv)`` with its output in ``log``; never returns."""
    status = 1
    try:
        output = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        try:
            status = main(argv)
        except SystemExit as done:
            status = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        except BaseException:
            traceback.print_exc()  # into the log, as a fresh interpreter would print it
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(status)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        sys.exit(main(sys.argv[1:]))
