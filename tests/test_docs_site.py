"""The documentation site builds with ``mkdocs build --strict`` (no broken link, anchor, nav
entry or API reference), into a temporary folder, writing nothing into the repository; its
command-line reference is generated from the parsers and lists every command and option."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import types

import pytest

from tests.support import ROOT

HOOKS = ROOT / "docs" / "hooks"


def hook(name: str) -> types.ModuleType:
    """A hook as MkDocs loads it, without writing its bytecode beside it."""
    path = HOOKS / f"{name}.py"
    module = types.ModuleType(name)
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)  # noqa: S102
    return module


def cli_reference_hook() -> types.ModuleType:
    return hook("cli_reference")


def all_parsers(parser: argparse.ArgumentParser, prefix: str = "magdash"):
    """Every command's parser under its name; a deprecated alias (``phase`` of ``depth``) is the
    same parser, listed once, under its command's name."""
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, subparser in action.choices.items():
                if id(subparser) not in seen:
                    seen.add(id(subparser))
                    yield from all_parsers(subparser, f"{prefix} {name}")


def test_the_cli_reference_lists_every_command_and_option():
    from magdash.cli import build_parser

    reference = cli_reference_hook().cli_reference_markdown()
    for name, parser in all_parsers(build_parser()):
        if name != "magdash":
            assert f"`{name}`" in reference, name
        for action in parser._actions:
            for flag in action.option_strings:
                assert f"`{flag}" in reference, (name, flag)
    assert "\\{n\\}" in reference  # a help text's braces are escaped, never read as Markdown attributes


def test_the_marker_of_the_cli_page_is_filled_and_a_lost_marker_is_an_error():
    hook = cli_reference_hook()

    class Page:
        class file:  # noqa: N801 - the attribute MkDocs's page has
            src_uri = "cli.md"

    filled = hook.on_page_markdown(f"# CLI\n\n{hook.MARKER}\n", Page)
    assert hook.MARKER not in filled and "## `magdash extract`" in filled
    with pytest.raises(ValueError, match="marker"):
        hook.on_page_markdown("# CLI\n", Page)


def test_a_list_right_after_a_paragraph_gets_the_blank_line_python_markdown_needs():
    lists = hook("github_lists").BlankLineBeforeLists(None)
    text = ["**Changed.**", "- one", "  continued", "- two", "", "```bash", "echo", "- not a list", "```",
            "Steps:", "1. first"]
    assert lists.run(text) == ["**Changed.**", "", "- one", "  continued", "- two", "", "```bash", "echo",
                               "- not a list", "```", "Steps:", "", "1. first"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_site_builds_strictly_into_a_temporary_folder(tmp_path):
    docs_before = sorted(p.relative_to(ROOT) for p in (ROOT / "docs").rglob("*"))
    site_before = (ROOT / "site").exists()
    jupyter_cache_before = (ROOT / ".cache" / "mkdocs-jupyter").exists()
    site = tmp_path / "site"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-5000:]
    assert sorted(p.relative_to(ROOT) for p in (ROOT / "docs").rglob("*")) == docs_before
    assert (ROOT / "site").exists() == site_before  # mkdocs's default site_dir was not written
    assert (ROOT / ".cache" / "mkdocs-jupyter").exists() == jupyter_cache_before
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "magdash freq corr" in cli and "--conventions" in cli
    runs = (site / "reference" / "runs" / "index.html").read_text(encoding="utf-8")
    assert "magdash.runs.analysis_runs" in runs
    assert not (site / "hooks").exists()  # the build's own code is not published
    for page in ("getting-started", "dashboard", "how-to/sql", "changelog"):
        assert (site / page / "index.html").is_file(), page
