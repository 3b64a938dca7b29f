"""Child process for tests/test_faults.py: ``magdash`` run with faults prepared.

    python -m tests.fault_child [--events FILE] [--fsize BYTES] [--as-headroom BYTES] -- ARGS...

runs ``magdash ARGS...`` (the CLI's ``main``) with results flushed after every batch
(``FLUSH_SECONDS = 0``), so a kill lands inside a write transaction often, and:

* ``--events FILE``: appends ``TIME EVENT`` lines (``start``, ``load-begin``, ``loaded``,
  ``write-begin N``, ``write-end N``) with unbuffered writes, so the parent can time a kill
  and tell where it landed;
* ``--fsize BYTES``: no file may grow beyond BYTES (``RLIMIT_FSIZE``) and SIGXFSZ is ignored,
  so a write past it fails with EFBIG as on a full disk instead of killing the process;
* ``--as-headroom BYTES``: once the model is loaded, the address space is limited to what
  the process uses then plus BYTES (``RLIMIT_AS``), so a large batch runs out of memory.

The exit status is the CLI's.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import sys
import time


def _vm_size_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fault_child")
    parser.add_argument("--events")
    parser.add_argument("--fsize", type=int)
    parser.add_argument("--as-headroom", type=int)
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    args = options.args[1:] if options.args[:1] == ["--"] else options.args

    events = None
    if options.events:
        events = os.open(options.events, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def event(text: str) -> None:
        if events is not None:
            os.write(events, f"{time.time():.3f} {text}\n".encode())

    event("start")
    if options.fsize is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (options.fsize, options.fsize))

    import magdash.extract
    from magdash.cli import main as magdash_main
    from magdash.store import Store

    magdash.extract.FLUSH_SECONDS = 0.0
    original_load = magdash.extract.load_model
    original_write = Store.write_vectors

    def load_model(*a, **k):
        event("load-begin")
        loaded = original_load(*a, **k)
        event("loaded")
        if options.as_headroom is not None:
            limit = _vm_size_bytes() + options.as_headroom
            resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
            event(f"as-limit {limit}")
        return loaded

    def write_vectors(self, model_id, item_keys, vectors):
        event(f"write-begin {len(item_keys)}")
        written = original_write(self, model_id, item_keys, vectors)
        event(f"write-end {written}")
        return written

    magdash.extract.load_model = load_model
    Store.write_vectors = write_vectors
    return magdash_main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
