"""A warm ``python -m magdash`` for the README test: commands run as written, without paying
the interpreter's imports (torch, transformers, SciPy, pandas: 2-4 s) again for each of them.

``serve SOCKET`` imports what the CLI needs once, then forks one child per request. A request
comes from ``client ARGS...`` (the ``python`` the README's shell finds first on its PATH): it
sends its arguments, working folder and environment with its standard input, output and error
streams (file descriptors over the Unix socket), and exits with the child's status. The child
takes the streams, the folder and the environment, runs ``magdash`` as ``python -m magdash``
would (``runpy``, ``__main__``, ``sys.argv``), runs the exit handlers and reports its status.
Anything but ``python -m magdash`` is handed to the real interpreter unchanged.

Every command of the README still runs in a process of its own, in order, in a real shell;
only the imports are shared. The CLI's first import in a fresh interpreter is tested elsewhere
(``tests/cli``, ``tests/test_faults.py``, the browser test).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from contextlib import suppress
from pathlib import Path

# What every CLI command imports on its way; the rest comes lazily, as in a fresh interpreter.
PRELOAD = (
    "magdash.cli", "magdash.cli.extract_command", "magdash.cli.listing_command", "magdash.cli.transfer_command", "magdash.cli.compact_command",
    "magdash.cli.analyze_command", "magdash.cli.freq_command", "magdash.cli.depth_command", "magdash.cli.controls_command", "magdash.cli.design_command",
    "magdash.cli.sweep_command", "magdash.store", "magdash.variability.analysis", "magdash.extraction", "magdash.sources",
    "torch", "transformers", "scipy.stats", "pandas", "pyarrow.parquet", "duckdb",
)
_LENGTH_BYTES = 8


def client(socket_path: str, real_python: str, args: list[str]) -> int:
    if args[:2] != ["-m", "magdash"]:
        os.execv(real_python, [real_python, *args])
    request = json.dumps({"args": args[2:], "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(socket_path)
        socket.send_fds(connection, [len(request).to_bytes(_LENGTH_BYTES, "big")], [0, 1, 2])
        connection.sendall(request)
        status = connection.recv(4)
    if len(status) != 4:
        print("warm python: the command's process died without a status", file=sys.stderr)
        return 1
    return int.from_bytes(status, "big", signed=True)


def serve(socket_path: str, served_log: str) -> None:
    import importlib

    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        sys.path.pop(0)  # this script's folder: a command run by ``python -m`` has its cwd there instead
    for module in PRELOAD:
        importlib.import_module(module)
    sys.stdout.flush()
    sys.stderr.flush()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(socket_path)
        server.listen(8)
        while True:
            connection, _ = server.accept()
            _reap()
            if os.fork() == 0:
                server.close()
                _run_request(connection, served_log)  # never returns
            connection.close()


def _reap() -> None:
    with suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _run_request(connection: socket.socket, served_log: str) -> None:
    import atexit
    import runpy
    import traceback

    status = 1
    try:
        header, fds, _, _ = socket.recv_fds(connection, _LENGTH_BYTES, 3)
        length = int.from_bytes(header, "big")
        data = b""
        while len(data) < length:
            data += connection.recv(length - len(data))
        request = json.loads(data)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        with open(served_log, "a", encoding="utf-8") as log:
            log.write(json.dumps(request["args"]) + "\n")
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path.insert(0, request["cwd"])
        sys.argv = ["magdash", *request["args"]]
        try:
            runpy.run_module("magdash", run_name="__main__", alter_sys=True)
            status = 0
        except SystemExit as done:
            if done.code is None or isinstance(done.code, int):
                status = done.code or 0
            else:
                print(done.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):
                stream.flush()
        try:
            connection.sendall(int(status).to_bytes(4, "big", signed=True))
        finally:
            os._exit(status)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    else:
        sys.exit(client(sys.argv[2], sys.argv[3], sys.argv[4:]))
