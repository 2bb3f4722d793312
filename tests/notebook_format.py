"""The normal form of the chapter notebooks and the agreement of each with its MyST twin.

Every chapter ``book/NN-name.ipynb`` is paired with ``book/myst/NN-name.md`` through jupytext
(``jupytext.toml``).  A committed notebook is in *normal form* when it equals :func:`normalize` of
itself, byte for byte:

* no outputs, no execution counts;
* notebook metadata: ``kernelspec`` only; cell metadata: ``tags`` and ``mystnb`` only (the keys the
  twins carry — JupyterLab's ``collapsed``/``scrolled``/``execution`` churn never reaches a commit);
* cell ids derived from the cell's type and source (the first 8 hex digits of a SHA-1, a counter
  added for identical cells), so that ids never change unless the cell does, whichever tool wrote the
  file last;
* nbformat 4.5 JSON as ``nbformat.writes`` lays it out (one-space indent, sorted keys), newline at end.

Commands (``make sync`` and ``make format`` call them)::

    python tests/notebook_format.py sync     # jupytext --sync every pair, then normalize the notebooks
    python tests/notebook_format.py check    # list notebooks not in normal form and pairs that disagree
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CELL_METADATA = ("tags", "mystnb")
NOTEBOOK_METADATA = ("kernelspec",)


def chapters() -> list[Path]:
    return sorted(BOOK.glob("*.ipynb"))


def twin(notebook: Path) -> Path:
    """The MyST text twin of a chapter notebook."""
    return notebook.parent / "myst" / f"{notebook.stem}.md"


def cell_id(cell_type: str, source: str, seen: dict[str, int]) -> str:
    """Deterministic id: a hash of type and source; the k-th repeat of an identical cell hashes k too."""
    key = f"{cell_type}\0{source}"
    k = seen.get(key, 0)
    seen[key] = k + 1
    if k:
        key += f"\0{k}"
    return hashlib.sha1(key.encode()).hexdigest()[:8]


def normalize(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` in normal form (see the module docstring)."""
    seen: dict[str, int] = {}
    cells = []
    for cell in nb.cells:
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        meta = {k: cell.metadata[k] for k in CELL_METADATA if cell.metadata.get(k)}
        new = {"cell_type": cell.cell_type, "id": cell_id(cell.cell_type, source, seen), "metadata": meta,
               "source": source}
        if cell.cell_type == "code":
            new |= {"execution_count": None, "outputs": []}
        elif cell.get("attachments"):
            new["attachments"] = cell.attachments
        cells.append(nbformat.from_dict(new))
    meta = {k: nb.metadata[k] for k in NOTEBOOK_METADATA if k in nb.metadata}
    return nbformat.from_dict({"nbformat": 4, "nbformat_minor": 5, "metadata": meta, "cells": cells})


def normal_text(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(normalize(nb)) + "\n"


def is_normal(path: Path) -> bool:
    return path.read_text() == normal_text(nbformat.read(path, as_version=4))


def write_normal(path: Path) -> bool:
    """Rewrite ``path`` in normal form; True if it changed."""
    text = normal_text(nbformat.read(path, as_version=4))
    if path.read_text() == text:
        return False
    path.write_text(text)
    return True


def _comparable(cell: nbformat.NotebookNode) -> tuple:
    source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
    return (cell.cell_type, source, list(cell.metadata.get("tags", [])), cell.metadata.get("mystnb") or {})


def pair_differences(notebook: Path) -> list[str]:
    """How the notebook and its twin disagree (cells, sources, tags, mystnb metadata); [] if they agree."""
    import jupytext

    md = twin(notebook)
    if not md.exists():
        return [f"{notebook.name}: no twin {md.relative_to(ROOT)}"]
    a = [_comparable(c) for c in nbformat.read(notebook, as_version=4).cells]
    b = [_comparable(c) for c in jupytext.read(md).cells]
    problems = []
    if len(a) != len(b):
        problems.append(f"{notebook.name}: {len(a)} cells, its twin {len(b)}")
    for i, (ca, cb) in enumerate(zip(a, b)):
        if ca != cb:
            what = [name for name, x, y in zip(("type", "source", "tags", "mystnb"), ca, cb) if x != y]
            first = ca[1].strip().splitlines()[:1] or [""]
            problems.append(f"{notebook.name}: cell {i} ({ca[0]}, {first[0][:60]!r}) differs in {', '.join(what)}")
            break  # the cells after the first difference are usually shifted: one message is enough
    return problems


def sync(paths: list[Path] | None = None) -> None:
    """``jupytext --sync`` each pair (the newer file wins), then put the notebooks in normal form."""
    paths = chapters() if paths is None else paths
    subprocess.run([sys.executable, "-m", "jupytext", "--sync", "--quiet", *map(str, paths)], check=True)
    for path in paths:
        if write_normal(path):
            print(f"normalized {path.relative_to(ROOT)}")


def check() -> list[str]:
    problems = []
    for path in chapters():
        if not is_normal(path):
            problems.append(f"{path.name}: not in normal form (run `make sync`)")
        problems += pair_differences(path)
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] == ["sync"]:
        sync([Path(p).resolve() for p in argv[1:]] or None)
        return 0
    if argv[:1] == ["check"]:
        problems = check()
        print("\n".join(problems) or "every chapter is in normal form and agrees with its twin")
        return 1 if problems else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
