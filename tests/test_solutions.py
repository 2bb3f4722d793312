"""The computational solutions are executed: ``solutions/<chapter>.md`` (MyST notebooks, one per chapter with
computational exercises, kept out of the book and of its student edition) run at ``ci`` scale and assert
what their solution text says through the claims API.

Each section ``## `ex-…` `` of a solutions notebook answers one exercise of its chapter; its claims carry that
exercise's label.  The exercises marked *(Computational.)* in a chapter whose solution is not executed yet
are listed in :data:`NOT_YET_EXECUTED` (a transitional list: it only shrinks).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("*.md"))
NOT_YET_EXECUTED = {"ex-3-lphi", "ex-3b-relu", "ex-7-hierarchy", "ex-8-computational", "ex-9-lipschitz-tight"}
_EXERCISE = re.compile(r"```\{exercise\}[^\n]*\n:label: (?P<label>[\w.:-]+)\n(?P<body>.*?)\n```", re.S)


def computational_exercises() -> dict[str, str]:
    """label → chapter stem of every exercise whose text starts with *(Computational.)*."""
    found = {}
    for chapter in sorted((ROOT / "book" / "myst").glob("*.md")):
        for match in _EXERCISE.finditer(chapter.read_text()):
            if "(Computational.)" in match["body"]:
                found[match["label"]] = chapter.stem
    return found


def sections(path: Path) -> list[str]:
    """The exercise labels a solutions notebook answers (its ``## `label` `` headings)."""
    return re.findall(r"^## `(ex-[\w.:-]+)`", path.read_text(), re.M)


def test_every_computational_exercise_has_an_executed_solution_or_is_listed():
    answered = {label: path.stem for path in SOLUTIONS for label in sections(path)}
    exercises = computational_exercises()
    assert exercises, "no computational exercise found: the pattern is wrong"
    for label, stem in answered.items():
        assert exercises.get(label) == stem, f"{label} is answered in solutions/{stem}.md but is no computational " \
                                             "exercise of that chapter"
    missing = set(exercises) - set(answered) - NOT_YET_EXECUTED
    assert not missing, f"computational exercises with no executed solution: {sorted(missing)}"
    stale = NOT_YET_EXECUTED & set(answered)
    assert not stale, f"executed now, remove from NOT_YET_EXECUTED: {sorted(stale)}"
    assert NOT_YET_EXECUTED <= set(exercises), sorted(NOT_YET_EXECUTED - set(exercises))


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_solution_notebook_runs_at_ci_and_asserts_its_claims(path, tmp_path):
    notebook = jupytext.read(path)
    assert [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])], "no parameters cell"
    executed = tmp_path / f"{path.stem}.ipynb"
    nbformat.write(notebook, executed)
    ledger = tmp_path / "ledger"
    env = os.environ | {"NTKBOOK_SCALE": "ci", "NTKBOOK_PROGRESS": "0", "NTKBOOK_LEDGER_DIR": str(ledger)}
    proc = subprocess.run([sys.executable, "-m", "papermill", str(executed), str(executed), "-p", "scale", "ci",
                           "-k", "python3", "--cwd", str(tmp_path), "--no-progress-bar", "--log-level", "ERROR"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    records = [json.loads(line) for line in (ledger / f"{path.stem}-solutions.jsonl").read_text().splitlines()]
    labels = {r["label"] for r in records}
    for label in sections(path):
        assert label in labels, f"the solution of {label} asserts nothing"
    undecided = [r["claim"] for r in records if r["status"] != "passed"]
    assert not undecided, f"a solution asserts what it claims: {undecided} did not pass (at ci an inconclusive " \
                          "claim does not raise, so this test asks for 'passed')"
