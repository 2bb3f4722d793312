"""Root pytest configuration: notebooks collected by nbval run at ci scale with a private ledger.

When ``$NTKBOOK_EXECUTED_DIR`` names the chapters papermill executed (``make test``:
``tests/execute_chapters.py`` wrote ``<dir>/book/<stem>.ipynb`` and their ledgers ``<dir>/ledger/<stem>.jsonl``)
and nbval re-executes those notebooks in this run, one more test follows the last cell of each notebook,
``<notebook>::ledger-matches-papermill``: the claims ledger nbval's execution wrote (into this run's private
ledger directory) must equal, byte for byte, the ledger of papermill's execution of the same chapter — two
executions at one scale give identical records (issue 15).  It is added only when every cell of the
notebook is selected (a partial run writes a partial ledger).
"""

import difflib
import os
import shutil
import tempfile
from pathlib import Path

import pytest

_CREATED_LEDGER = pytest.StashKey[str]()


def pytest_configure(config):
    os.environ.setdefault("NTKBOOK_SCALE", "ci")
    os.environ.setdefault("NTKBOOK_PROGRESS", "0")
    if "NTKBOOK_LEDGER_DIR" not in os.environ:
        # a private ledger for this run (xdist workers inherit it from the controller), removed at the end
        config.stash[_CREATED_LEDGER] = os.environ["NTKBOOK_LEDGER_DIR"] = tempfile.mkdtemp(prefix="ntkbook-ledger-")


def pytest_unconfigure(config):
    created = config.stash.get(_CREATED_LEDGER, None)
    if created is not None:
        shutil.rmtree(created, ignore_errors=True)


class LedgerMatchesPapermill(pytest.Item):
    """nbval's ledger of a chapter equals papermill's, byte for byte (see the module docstring)."""

    def runtest(self):
        stem = self.path.stem
        ours = Path(os.environ["NTKBOOK_LEDGER_DIR"]) / f"{stem}.jsonl"
        theirs = Path(os.environ["NTKBOOK_EXECUTED_DIR"]) / "ledger" / f"{stem}.jsonl"
        if not theirs.exists():
            raise AssertionError(f"papermill wrote no ledger {theirs} for {stem}")
        if not ours.exists():
            raise AssertionError(f"nbval's execution of {stem} wrote no ledger {ours}")
        a, b = theirs.read_bytes(), ours.read_bytes()
        if a != b:
            diff = difflib.unified_diff(a.decode().splitlines(), b.decode().splitlines(), "papermill", "nbval",
                                        lineterm="", n=0)
            raise AssertionError(f"the ledgers of two executions of {stem} at one scale differ:\n"
                                 + "\n".join(list(diff)[:40]))

    def reportinfo(self):
        return self.path, None, f"{self.path.stem}: nbval's ledger == papermill's ledger"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """After deselection: append :class:`LedgerMatchesPapermill` after the last cell of each nbval notebook
    whose cells are all selected, when ``$NTKBOOK_EXECUTED_DIR`` is set."""
    if not os.environ.get("NTKBOOK_EXECUTED_DIR"):
        return
    cells: dict = {}
    for item in items:
        parent = item.parent
        if type(item).__name__ == "IPyNbCell" and parent is not None and hasattr(parent, "nb"):
            cells.setdefault(parent, []).append(item)
    for parent, selected in cells.items():
        code_cells = sum(cell.cell_type == "code" for cell in parent.nb.cells)
        if len(selected) != code_cells:
            continue
        items.insert(items.index(selected[-1]) + 1,
                     LedgerMatchesPapermill.from_parent(parent, name="ledger-matches-papermill"))
