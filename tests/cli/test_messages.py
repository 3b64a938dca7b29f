"""Library messages name the Python parameter (``exclude_carriers=``); the command line writes
each as its option (``--exclude-carrier``), read from the params classes' fields and the
command's own parser, so the two never drift apart."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import magdash as md
from magdash.cli import build_parser, main
from magdash.cli.common import command_line_text
from magdash.errors import MagdashError
from tests.support import build_base_store

ROOT = Path(__file__).resolve().parents[2]

# A string outside magdash/cli/ may name one of magdash's command-line options only where it
# speaks of the command line itself, by name; each exception says why.
DOCUMENTED_EXCEPTIONS = {
    ("pages/home.py", "--model"): "the home page shows the command line's extraction as such",
    ("pages/ui/sidebar.py", "--store"): "the store box's help names the command line's equivalent",
    ("pages/scaling.py", "--bootstrap-layers"): "the caption says what the command line offers beyond the page",
    ("magdash/dashboard/behaviour_page.py", "--model"): "the empty page shows the command line's behave as such",
    ("magdash/dashboard/behaviour_page.py", "--import"): "the empty page shows the command line's import as such",
    ("magdash/dashboard/behaviour_page.py", "--name"): "the empty page shows the command line's import as such",
    ("magdash/dashboard/steering_page.py", "--model"): "the empty page shows the command to run first as such",
    ("magdash/dashboard/steering_page.py", "--store"): "the empty page shows the command to run first as such",
    ("pages/stimuli.py", "--model"): "a saved comparison set's note shows the command line that runs it",
    ("pages/stimuli.py", "--comparisons"): "a saved comparison set's note shows the command line that runs it",
}


def _command_line_options() -> set[str]:
    parser = build_parser()
    [commands] = [action for action in parser._actions if hasattr(action, "choices") and action.choices]
    options = {flag for command in commands.choices.values() for action in command._actions
               for flag in action.option_strings if flag.startswith("--") and flag != "--help"}
    return options | {"--verbose", "--version"}


def _docstrings(tree: ast.AST) -> set[int]:
    """Every string standing alone as a statement: a module's, class's or function's docstring,
    or an attribute's (the string under an assignment), documentation rather than a message."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def _option_homes(tree: ast.AST) -> set[int]:
    """The ``flag="--..."`` of a params field's ``option(...)``: where the mapping itself lives."""
    return {id(keyword.value) for node in ast.walk(tree) if isinstance(node, ast.Call)
            for keyword in node.keywords if keyword.arg == "flag"}


def _message_strings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _docstrings(tree) | _option_homes(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped]


def _sources_outside_the_cli() -> list[Path]:
    files = [*sorted((ROOT / "magdash").rglob("*.py")), *sorted((ROOT / "pages").rglob("*.py")), ROOT / "app.py"]
    return [path for path in files if "cli" not in path.relative_to(ROOT).parts[:2]]


def test_no_message_outside_the_cli_names_a_command_line_option():
    options = _command_line_options()
    assert {"--exclude-carrier", "--trust-remote-code", "--probe-n-boot", "--store"} <= options
    pattern = re.compile(rf"(?<![\w-])({'|'.join(sorted(map(re.escape, options), key=len, reverse=True))})(?![\w-])")
    found, excused = [], set()
    for path in _sources_outside_the_cli():
        where = path.relative_to(ROOT).as_posix()
        for line, text in _message_strings(path):
            for flag in pattern.findall(text):
                if (where, flag) in DOCUMENTED_EXCEPTIONS:
                    excused.add((where, flag))
                else:
                    found.append(f"{where}:{line}: {flag} in {text!r}")
    assert not found, "\n".join(found)
    assert excused == set(DOCUMENTED_EXCEPTIONS), "an exception no longer needed: remove it"


def test_the_scan_finds_an_option_in_a_message(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('"""Docstring: ``--store`` is fine here."""\n'
                       'def f(n):\n    raise ValueError(f"lower --batch-size {n}")\n', encoding="utf-8")
    assert [text for _, text in _message_strings(planted)] == ["lower --batch-size "]


@pytest.mark.parametrize(("text", "command", "said"), [
    ("exclude_carriers=(3,) leaves it out", "analyze", "--exclude-carrier 3 leaves it out"),
    ("exclude_carriers=(1, 3)", "analyze", "--exclude-carrier 1 --exclude-carrier 3"),
    ("measures=('eucl', 'proj') only", "analyze", "--measures eucl,proj only"),
    ("pass trust_remote_code=True only if", "extract", "pass --trust-remote-code only if"),
    ("random_control=False", "controls", "--no-random"),
    ("n_boot=-1 must be 0 or more", "probe", "--probe-n-boot -1 must be 0 or more"),
    ("n_boot=-1 must be 0 or more", "analyze", "--n-boot -1 must be 0 or more"),
    ("seed=3.", "controls", "--seed 3."),  # the analysis's seed, not the permutations' --perm-seed
    ("point store= at a file", "list", "point --store at a file"),
    ("use dtype='bfloat16' under another name=", None, "use --dtype bfloat16 under another --name"),
    ("p=0.01 and gamma_c=0.4 stay", "analyze", "p=0.01 and gamma_c=0.4 stay"),  # not parameters
    ("random:seed=3 stays", "analyze", "random:seed=3 stays"),  # part of a spec, not a parameter
])
def test_the_command_line_writes_a_parameter_as_its_option(text, command, said):
    commands = next(action for action in build_parser()._actions if hasattr(action, "choices") and action.choices)
    parser = commands.choices[command] if command else None
    assert command_line_text(text, parser) == said


@pytest.fixture(scope="module")
def base_store(tmp_path_factory) -> Path:
    return build_base_store(tmp_path_factory.mktemp("messages") / "store.duckdb")


def _cli_error(capsys, *arguments: str) -> str:
    assert main(list(arguments)) == 2
    error = capsys.readouterr().err
    assert error.startswith("magdash: error: ") and error.count("\n") == 1 and "Traceback" not in error
    return error


def test_a_carrier_out_of_range_names_the_parameter_in_python_and_the_option_on_the_command_line(base_store, capsys):
    with pytest.raises(MagdashError, match=re.escape("exclude_carriers=(9,): the stimulus set has carriers 0 to")):
        md.analyze(md.Store(base_store), "base", params=md.AnalysisParams(exclude_carriers=(9,), n_boot=0))
    error = _cli_error(capsys, "analyze", "--store", str(base_store), "--model", "base", "--exclude-carrier", "9",
                       "--n-boot", "0")
    assert "--exclude-carrier 9: the stimulus set has carriers 0 to" in error and "exclude_carriers" not in error


def test_a_bad_probe_bootstrap_names_the_parameter_in_python_and_the_probes_option(base_store, capsys):
    with pytest.raises(MagdashError, match=re.escape("n_boot=-1 must be a whole number >= 0")):
        md.ProbeParams(n_boot=-1)
    error = _cli_error(capsys, "probe", "--store", str(base_store), "--model", "base", "--probe-n-boot", "-1")
    assert "--probe-n-boot -1 must be a whole number >= 0" in error and "n_boot=" not in error


def test_a_permutation_count_names_the_parameter_in_python_and_the_option_on_the_command_line(base_store, capsys):
    with pytest.raises(MagdashError, match=re.escape("n_perm=0 must be 1 or more")):
        md.ControlsParams(n_perm=0)
    error = _cli_error(capsys, "controls", "--store", str(base_store), "--model", "base", "--n-perm", "0")
    assert "--n-perm 0 must be 1 or more" in error


def test_a_store_path_that_is_no_store_says_store_in_python_and_the_option_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "notes.duckdb"
    path.write_text("not a store", encoding="utf-8")
    with pytest.raises(MagdashError, match="point store= at a store"):
        md.Store(path)
    error = _cli_error(capsys, "list", "--store", str(path))
    assert "point --store at a store" in error and "store=" not in error
