"""The README's commands run as written, in order, on a fresh checkout.

Every ``bash`` block of the README from "Command line" to "Dashboard" is run, in order, in one
shell in an empty folder that holds only the repository's virtual environment as ``.venv`` (as
the one-command set-up leaves it): activation, extractions, the custom stimulus set, export and
import, analyses, comparisons, robustness controls and design, frequency and depth. Blocks
introduced as needing "*your files*" (your own models, the paper's npz files, your corpus) are
left out, and so are the "*measured example*" blocks that reproduce a worked example's numbers
on the built-in models (minutes each; the same paths run in tests/test_builtin_models.py); the
test checks that these are the only ones.

Each ``python -m magdash`` command runs in a process of its own forked from a server that has
imported the CLI's dependencies once (``tests/warm_python.py``): the 40-odd commands would
otherwise spend most of their time importing torch, transformers and SciPy again.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT, warm_python

pytestmark = pytest.mark.slow

YOURS = "*your files*"
EXAMPLE = "*measured example*"
BUILTIN_MODELS = ("minilm", "smollm2", "gemma3-270m")


def readme_blocks() -> list[tuple[str, str]]:
    """(kind, commands) for every bash block of the CLI sections, in README order; kind is
    "run", "yours" or "example"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Command line"):text.index("## Dashboard")]
    blocks, end = [], 0
    for fence in re.finditer(r"```(\w*)\n(.*?)```", section, re.S):
        prose, end = section[end:fence.start()], fence.end()
        if fence[1] != "bash":  # printed output, not commands
            continue
        introduction = prose.strip().split("\n\n")[-1]  # the paragraph right above the block
        kind = "yours" if YOURS in introduction else "example" if EXAMPLE in introduction else "run"
        blocks.append((kind, fence[2]))
    return blocks


PLACEHOLDERS = ("/models/", "meta-llama/", "hidden_states.npz", "corpus/", "counts.csv", "mytext.txt")


def test_only_blocks_needing_your_files_or_minutes_are_left_out():
    blocks = readme_blocks()
    yours = [body for kind, body in blocks if kind == "yours"]
    assert len(yours) == 4
    for body in yours:
        assert any(p in body for p in PLACEHOLDERS), body
    examples = [body for kind, body in blocks if kind == "example"]
    assert examples
    for body in examples:
        assert not any(p in body for p in PLACEHOLDERS), body
        models = re.findall(r"--model (\S+)", body) + re.findall(r"for m in ([^;]+);", body)
        names = {name.split("@")[0] for found in models for name in found.split() if not name.startswith("$")}
        assert names and names <= set(BUILTIN_MODELS), names
        # A worked example's own store must not leak into the commands that follow it.
        assert ("export MAGDASH_STORE" in body) == ("unset MAGDASH_STORE" in body), body
    for kind, body in blocks:
        if kind == "run":
            assert not any(p in body for p in PLACEHOLDERS), body


@pytest.mark.timeout(1800)
def test_the_readme_commands_run_as_written_in_order(tmp_path):
    venv = Path(sys.prefix)
    if not (venv / "bin" / "activate").is_file():  # not a virtual environment: stand one in
        venv = tmp_path / "env"
        (venv / "bin").mkdir(parents=True)
        (venv / "bin" / "activate").write_text(f'export PATH="{Path(sys.executable).parent}:$PATH"\n')
    work = tmp_path / "clone"
    work.mkdir()
    commands = [body for kind, body in readme_blocks() if kind == "run"]
    assert commands[0].startswith("source .venv/bin/activate\n")
    script = "set -e\n" + "\n".join(commands)
    env = {key: value for key, value in os.environ.items() if key not in ("MAGDASH_STORE", "VIRTUAL_ENV")}
    env |= {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    activated = env | {"VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}:{env['PATH']}"}
    with warm_python(tmp_path / "warm", activated) as (shim, served):
        # .venv/bin/activate activates the environment, then puts the warm python first.
        (work / ".venv" / "bin").mkdir(parents=True)
        (work / ".venv" / "bin" / "activate").write_text(f'source "{venv}/bin/activate"\nexport PATH="{shim}:$PATH"\n')
        result = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True,
                                timeout=1800)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert len(served.read_text().splitlines()) == script.count("python -m magdash ")  # each in a process of its own
    assert "minilm-copy" in result.stdout  # the imported copy is listed by a later command... or analysed
    assert (work / "cache" / "magdash.duckdb").is_file() and (work / "minilm.npz").is_file()
    assert "Wilcoxon p = 0.25" in result.stdout  # compare ran on the paper's stimuli
