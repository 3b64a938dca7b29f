"""Check that the fast loop (docs/development.md) tests every module of magdash/ and every page.

Runs the fast loop (docs/development.md's command) under pytest-cov and fails, naming them, for the
modules of ``magdash/`` and ``pages/ui/`` none of whose function bodies ran (importing a module
runs its definitions, not its functions) and for the page scripts of ``pages/`` that never ran. Prints
the fast loop's test count, its wall time and the line coverage it reaches.

    usage: .venv/bin/python .ci/fast_loop_check.py
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAST_LOOP = ["-m", "pytest", "-q", "-n", "auto", "-m", "not slow and not browser and not faults and not bad_input"]


def function_body_lines(path: Path) -> set[int]:
    """Lines inside the bodies of the functions and methods of ``path``."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for statement in node.body:
                lines.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    return lines


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "coverage.json"
        started = time.monotonic()
        run = subprocess.run([sys.executable, *FAST_LOOP, "--cov=magdash", "--cov=pages",
                              f"--cov-report=json:{report}"], cwd=ROOT, capture_output=True, text=True)
        seconds = time.monotonic() - started
        print(run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-2000:])
        if run.returncode != 0:
            print(run.stdout[-4000:], run.stderr[-2000:])
            return 1
        files = json.loads(report.read_text())["files"]
        totals = json.loads(report.read_text())["totals"]
    executed = {str(Path(name).resolve().relative_to(ROOT)): set(data["executed_lines"]) for name, data in files.items()}
    statements = {str(Path(name).resolve().relative_to(ROOT)): data["summary"]["num_statements"]
                  for name, data in files.items()}
    untested = []
    for path in sorted([*ROOT.glob("magdash/**/*.py"), *ROOT.glob("pages/**/*.py")]):
        relative = str(path.relative_to(ROOT))
        ran = executed.get(relative, set())
        if statements.get(relative, 1) == 0:  # a package's docstring alone
            continue
        if path.parent == ROOT / "pages":  # a page script: it runs top to bottom under AppTest
            tested = bool(ran)
        else:
            bodies = function_body_lines(path)
            tested = not bodies or bool(bodies & ran)
        if not tested:
            untested.append(relative)
    print(f"fast loop: {seconds:.0f} s wall (coverage on), line coverage {totals['percent_covered']:.1f}% "
          f"of magdash/ and pages/")
    if untested:
        print("no test of the fast loop runs these:\n  " + "\n  ".join(untested))
        return 1
    print("every module of magdash/ and every page is tested by the fast loop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
