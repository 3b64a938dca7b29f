"""The commands a Markdown page shows, and one shell that runs them as a reader would.

The README test and the docs test share this: every ``bash`` and ``python`` block of a page is a
command block, run in order in one shell in an empty folder that holds only the repository's
virtual environment as ``.venv`` (as the one-command set-up leaves it). A block is left out only
when the page says so, right above it:

- *your files* in the paragraph above: your own models, the paper's npz files, your corpus
  (the paths are examples);
- *measured example* in the paragraph above: it reproduces a worked example's numbers on the
  built-in decoders, minutes each on a CPU (the same paths run in tests/test_builtin_models.py);
- a comment ``<!-- not run: KEY -->`` on the line above the block, KEY one of
  :data:`NOT_RUN_REASONS`, which say why.

Each ``python -m magdash`` command runs in a process of its own forked from a server that has
imported the CLI's dependencies once (``tests/warm_python.py``): the commands would otherwise
spend most of their time importing torch, transformers and SciPy again. A ``python`` block runs
as ``python - <<'PY'`` with the real interpreter.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from tests.support import warm_python

YOURS = "*your files*"
EXAMPLE = "*measured example*"
NOT_RUN_REASONS = {
    "setup": "a one-command set-up: it creates the virtual environment the other commands run in "
             "(CI runs the test command itself: .ci/run)",
    "suite": "it runs the test suite, which this test is part of",
    "server": "it starts the dashboard, a server that runs until stopped (tests/app/test_browser.py starts one)",
    "gpu": "it needs a CUDA GPU and torch's CUDA build",
    "cluster": "it needs a running multi-node Ray cluster (tests/sweep/test_ray.py runs a local one)",
    "your-session": "it uses a model or arrays of the reader's own session (tests/api/test_arrays.py and "
                    "tests/api/test_adapters.py make the same calls on tiny models)",
}
"""Why a block marked ``<!-- not run: KEY -->`` is not run, by KEY."""
PLACEHOLDERS = ("/models/", "meta-llama/", "hidden_states.npz", "corpus/", "counts.csv", "mytext.txt",
                "results/paradigm_a", "llama_instruct", ".gguf", "ollama:")
"""What a *your files* block names: paths and models that only a reader has."""
BUILTIN_MODELS = ("minilm", "smollm2", "gemma3-270m")

_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<key>[\w-]+)\s*-->\s*$")
COMMAND_LANGUAGES = ("bash", "python")


@dataclass(frozen=True)
class Block:
    """One command block of a page."""

    page: str
    language: str
    body: str
    kind: str
    """"run", "yours", "example", or the KEY of a ``<!-- not run: KEY -->`` comment."""


def command_blocks(text: str, page: str) -> list[Block]:
    """The ``bash`` and ``python`` blocks of a page's Markdown, in order, each with its kind."""
    blocks, end = [], 0
    for fence in _FENCE.finditer(text):
        prose, end = text[end:fence.start()], fence.end()
        if fence["lang"] not in COMMAND_LANGUAGES:  # printed output, a plan file, SQL
            continue
        body = textwrap.dedent(fence["indent"] + fence["body"])
        lines_above = prose.rstrip("\n").split("\n")
        marker = _NOT_RUN.search(lines_above[-1]) if lines_above else None
        introduction = prose.strip().split("\n\n")[-1]  # the paragraph right above the block
        if marker:
            kind = marker["key"]
        elif YOURS in introduction:
            kind = "yours"
        elif EXAMPLE in introduction:
            kind = "example"
        else:
            kind = "run"
        blocks.append(Block(page, fence["lang"], body, kind))
    return blocks


def why_not_run(block: Block) -> str | None:
    """Why ``block`` is left out (None when it runs); a problem with how it is marked raises."""
    if block.kind == "run":
        return None
    if block.kind == "yours":
        assert any(p in block.body for p in PLACEHOLDERS), f"{block.page}: a *your files* block names no file of yours:\n{block.body}"
        return "it needs your own files (the paths are examples)"
    if block.kind == "example":
        assert not any(p in block.body for p in PLACEHOLDERS), f"{block.page}: a measured example needs your files:\n{block.body}"
        models = re.findall(r"--model (\S+)", block.body) + re.findall(r"for m in ([^;]+);", block.body)
        names = {name.split("@")[0] for found in models for name in found.split() if not name.startswith("$")}
        assert names and names <= set(BUILTIN_MODELS), f"{block.page}: a measured example on {names}"
        # A worked example's own store must not leak into the commands that follow it.
        assert ("export MAGDASH_STORE" in block.body) == ("unset MAGDASH_STORE" in block.body), block.body
        return "it reproduces a worked example's numbers on the built-in decoders: minutes on a CPU"
    assert block.kind in NOT_RUN_REASONS, f"{block.page}: unknown reason {block.kind!r}; known: {sorted(NOT_RUN_REASONS)}"
    return NOT_RUN_REASONS[block.kind]


def shell_script(blocks: list[Block]) -> str:
    """The blocks that run, as one ``set -e`` script, in order. The python blocks of a page that
    follow one another run in one interpreter, as a reader's notebook or console runs them."""
    parts: list[str] = []
    session: list[Block] = []

    def end_session() -> None:
        if session:
            body = "".join(block.body for block in session)
            assert "\nPY\n" not in body
            parts.append(f"python - <<'PY'\n{body}PY")
            session.clear()

    for block in blocks:
        if block.kind != "run":
            continue
        if block.language == "python":
            if session and session[-1].page != block.page:
                end_session()
            session.append(block)
        else:
            end_session()
            parts.append(block.body)
    end_session()
    return "set -e\n" + "\n".join(parts)


def run_in_a_fresh_folder(script: str, tmp_path: Path, timeout: float = 1800) -> tuple[subprocess.CompletedProcess,
                                                                                      int, Path]:
    """Run ``script`` with bash in an empty folder holding only ``.venv`` (this environment, with
    the warm ``python`` first on its PATH after ``source .venv/bin/activate``). Returns the
    finished process, how many ``python -m magdash`` commands the warm server served, and the folder."""
    venv = Path(sys.prefix)
    if not (venv / "bin" / "activate").is_file():  # not a virtual environment: stand one in
        venv = tmp_path / "env"
        (venv / "bin").mkdir(parents=True)
        (venv / "bin" / "activate").write_text(f'export PATH="{Path(sys.executable).parent}:$PATH"\n')
    work = tmp_path / "clone"
    work.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in ("MAGDASH_STORE", "VIRTUAL_ENV")}
    env |= {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    activated = env | {"VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}:{env['PATH']}"}
    with warm_python(tmp_path / "warm", activated) as (shim, served):
        # .venv/bin/activate activates the environment, then puts the warm python first.
        (work / ".venv" / "bin").mkdir(parents=True)
        (work / ".venv" / "bin" / "activate").write_text(f'source "{venv}/bin/activate"\nexport PATH="{shim}:$PATH"\n')
        result = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True,
                                timeout=timeout)
        served_count = len(served.read_text().splitlines())
    return result, served_count, work
