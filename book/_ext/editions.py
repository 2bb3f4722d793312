"""The book's editions for a course: the student edition's sources without solutions, and the notebook
bundle students open in JupyterLab (``make book-student``, ``make handout``).

* **Solutions out of the sources** (:func:`strip_solutions`, :func:`strip_notebook`): every fenced
  ``{solution}`` block (back-tick or colon fence, any length) is removed from the Markdown cells of the
  chapters and from their MyST twins.  ``hide_solutions`` (sphinx-exercise) only leaves them out of the
  rendered pages; Sphinx still copied each chapter's source notebook, with every solution, into
  ``_sources/`` (what each page's download button serves).  Code cells are never touched, so a stripped
  chapter has the same key in Jupyter Book's execution cache (jupyter-cache hashes the code cells and the
  kernelspec only) and the student edition reuses ``make book``'s executed chapters.  Gated solutions
  (``{solution-start}`` … ``{solution-end}``, which may span code cells) are refused with an error rather
  than half removed.
* **The student copy** (:func:`student_copy`): ``_toc.yml`` and ``book/`` copied into another folder, every
  chapter stripped, ``_config.yml`` with ``hide_solutions`` on.
* **The notebook bundle** (:func:`write_handout`): for each chapter of the table of contents, the stripped
  source notebook with empty outputs (homework) and the stripped notebook with the outputs of ``make book``'s
  execution cache at ``$NTKBOOK_SCALE`` (reading; nothing is executed), the ``ntkbook`` package with
  ``pyproject.toml`` and ``requirements.txt`` (to ``pip install``), and a README; as a folder and a zip.

Usage (from the repository root)::

    python book/_ext/editions.py student-copy DEST
    python book/_ext/editions.py handout _build/handout
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from execute_stale_chapters import toc_notebooks  # a sibling module

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = "ntkbook-notebooks"
# an opening fence of a solution block: ``` or ~~~ or ::: (three or more), then {solution} or {solution-start}
_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,}|:{3,})\s*\{(?P<name>solution(?:-start|-end)?)\}")


def _closes(line: str, char: str, length: int) -> bool:
    """Whether ``line`` closes a fence of ``length`` characters ``char`` (CommonMark: the same character, at
    least as many, nothing else on the line)."""
    stripped = line.strip()
    return bool(stripped) and set(stripped) == {char} and len(stripped) >= length


def strip_solutions(text: str) -> str:
    """``text`` (Markdown / MyST) without its fenced ``{solution}`` blocks; a blank line left doubled by a
    removed block is dropped.

    Raises:
        ValueError: for a solution block that is never closed, and for gated solutions
            (``{solution-start}``), which this function does not remove.
    """
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _OPEN.match(lines[i])
        if match is None:
            out.append(lines[i])
            i += 1
            continue
        if match["name"] != "solution":
            raise ValueError(f"line {i + 1}: gated solutions ({{{match['name']}}}) are not supported by the "
                             "student edition; write the solution as one {solution} block")
        fence = match["fence"]
        end = i + 1
        while end < len(lines) and not _closes(lines[end], fence[0], len(fence)):
            end += 1
        if end == len(lines):
            raise ValueError(f"line {i + 1}: the {{solution}} block opened here is never closed ({fence})")
        i = end + 1
        if (not out or not out[-1].strip()) and i < len(lines) and not lines[i].strip():
            i += 1  # the blank line after the block: the one before it already separates
    return "".join(out)


def strip_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of the notebook ``nb`` without solutions: :func:`strip_solutions` applied to every Markdown and
    raw cell, cells left empty by it dropped; code cells (hence the execution cache's key) unchanged."""
    out = copy.deepcopy(nb)
    cells = []
    for cell in out.cells:
        if cell.cell_type != "code":
            source = strip_solutions(cell.source)
            if source.strip() == "" and cell.source.strip() != "":
                continue
            cell.source = source.rstrip("\n")
        cells.append(cell)
    out.cells = cells
    return out


def without_outputs(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` with every code cell's outputs and execution count emptied (as committed)."""
    out = copy.deepcopy(nb)
    for cell in out.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return out


def student_copy(root: Path, dest: Path) -> list[Path]:
    """Copy ``root``'s ``_toc.yml`` and ``book/`` into ``dest`` with every solution removed from the chapters
    (``book/*.ipynb``), their MyST twins and the pages (``book/**/*.md``), and write ``dest/_config.yml``:
    ``root``'s with ``hide_solutions`` on.  Returns the files that had a solution.

    Raises:
        ValueError: if ``dest`` already holds a ``book/`` folder, or as :func:`strip_solutions`.
    """
    root, dest = Path(root), Path(dest)
    if (dest / "book").exists():
        raise ValueError(f"{dest / 'book'} exists already: the student copy needs an empty folder")
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(root / "_toc.yml", dest / "_toc.yml")
    shutil.copytree(root / "book", dest / "book", ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints"))
    config = yaml.safe_load((root / "_config.yml").read_text())
    config.setdefault("sphinx", {}).setdefault("config", {})["hide_solutions"] = True
    (dest / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    changed = []
    for path in sorted((dest / "book").rglob("*")):
        if path.suffix == ".ipynb":
            nb = nbformat.read(path, as_version=4)
            stripped = strip_notebook(nb)
            if stripped != nb:
                nbformat.write(stripped, path)
                changed.append(path)
        elif path.suffix == ".md":
            text = path.read_text()
            stripped_text = strip_solutions(text)
            if stripped_text != text:
                path.write_text(stripped_text)
                changed.append(path)
    return changed


def executed_from_cache(nb: nbformat.NotebookNode, cache: Any) -> nbformat.NotebookNode | None:
    """``nb`` with the outputs of its execution in the jupyter-cache ``cache`` (matched as myst-nb matches it,
    by the code cells), or None when the cache has no execution of this code."""
    try:
        _, merged = cache.merge_match_into_notebook(nb)
    except KeyError:
        return None
    return merged


README = """\
# ntkbook — the chapters as notebooks

Notebooks of the executable textbook *Wide networks become linear* (ntkbook {version}, scale `{scale}`,
{commit}).  The exercise solutions are not included.

* `notebooks/` — the chapters with empty outputs: open them, run them, do the exercises.
* `executed/` — the same chapters with the outputs of the book's build at `{scale}` scale, to read
  (nothing to install; JupyterLab, VS Code or any notebook viewer shows them).
* `ntkbook/`, `pyproject.toml`, `requirements.txt` — the Python package the chapters import and the
  pinned toolchain.

## Running the notebooks

With Python 3.11 or newer, in this folder:

```bash
python3 -m venv .venv
.venv/bin/pip install -r requirements.txt   # the pinned toolchain, with JupyterLab and jupyterlab-myst
.venv/bin/pip install -e .                  # the ntkbook package
.venv/bin/jupyter lab notebooks/
```

`jupyterlab-myst` (in `requirements.txt`) renders the MyST in the Markdown cells: theorems,
exercises, maths and citations show formatted instead of as raw `{{prf:theorem}}` text.

Each notebook's first code cell (tagged `parameters`) reads the **scale** from the environment variable
`NTKBOOK_SCALE`: `ci` (seconds per chapter, a quick check that everything runs), `book` (the default: the
sizes of the rendered book, minutes per chapter on a laptop CPU) or `paper` (the papers' sizes, meant for a
GPU).  For example `NTKBOOK_SCALE=ci .venv/bin/jupyter lab notebooks/`.

Chapters: {chapters}.
"""


def write_handout(out: Path, root: Path = ROOT, build_dir: Path | None = None, scale: str | None = None,
                  commit: str | None = None) -> Path:
    """Write the notebook bundle for the chapters of ``root/_toc.yml`` into ``out/ntkbook-notebooks/`` and
    ``out/ntkbook-notebooks.zip``; return the zip's path.  The executed notebooks come from the execution cache
    of ``build_dir`` (default ``root/_build``) at ``scale`` (default ``$NTKBOOK_SCALE``, else ``book``), as
    ``make book`` filled it; nothing is executed.

    Raises:
        ValueError: when a chapter has no execution in that cache (run ``make book`` or ``make handout``,
            which executes the missing chapters first), or when ``root`` lists no chapter.
    """
    import ntkbook
    from jupyter_cache import get_cache

    from execution_cache import cache_dir

    root = Path(root).resolve()
    scale = scale or os.environ.get("NTKBOOK_SCALE", "book")
    chapters = toc_notebooks(root)
    if not chapters:
        raise ValueError(f"{root / '_toc.yml'} lists no notebook")
    cache_path = cache_dir(Path(build_dir or root / "_build").resolve(), scale)
    if not cache_path.is_dir():
        raise ValueError(f"no execution cache at {cache_path}: run make book (NTKBOOK_SCALE={scale}) first")
    cache = get_cache(str(cache_path))
    bundle = Path(out) / BUNDLE
    if bundle.exists():
        shutil.rmtree(bundle)
    (bundle / "notebooks").mkdir(parents=True)
    (bundle / "executed").mkdir()
    missing = []
    for path in chapters:
        nb = strip_notebook(nbformat.read(path, as_version=4))
        executed = executed_from_cache(nb, cache)
        if executed is None:
            missing.append(path.stem)
            continue
        nbformat.validate(executed)
        nbformat.write(without_outputs(nb), bundle / "notebooks" / path.name)
        nbformat.write(executed, bundle / "executed" / path.name)
    if missing:
        raise ValueError(f"not in the execution cache at scale {scale} ({cache_path.name}): {', '.join(missing)}; "
                         "make handout executes them first")
    package = Path(ntkbook.__file__).resolve().parent
    shutil.copytree(package, bundle / "ntkbook", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "requirements.txt", "LICENSE", "CITATION.cff"):
        if (package.parent / name).exists():
            shutil.copy(package.parent / name, bundle / name)
    commit = commit or os.environ.get("NTKBOOK_COMMIT")
    (bundle / "README.md").write_text(README.format(
        version=ntkbook.__version__, scale=scale, commit=f"commit {commit}" if commit else "commit unknown",
        chapters=", ".join(p.stem for p in chapters)))
    archive = Path(out) / f"{BUNDLE}.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in sorted(bundle.rglob("*")):
            if file.is_file():
                zf.write(file, file.relative_to(bundle.parent).as_posix())
    return archive


def main(argv: list[str] | None = None) -> int:
    """Command line: ``student-copy DEST`` or ``handout OUT``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    student = sub.add_parser("student-copy", help="copy the book without solutions into DEST")
    student.add_argument("dest", type=Path)
    student.add_argument("--root", type=Path, default=ROOT)
    handout = sub.add_parser("handout", help="write the notebook bundle into OUT")
    handout.add_argument("out", type=Path)
    handout.add_argument("--root", type=Path, default=ROOT)
    handout.add_argument("--build-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        if args.command == "student-copy":
            changed = student_copy(args.root, args.dest)
            print(f"student copy in {args.dest}: solutions removed from {len(changed)} file(s)", flush=True)
        else:
            archive = write_handout(args.out, args.root, args.build_dir)
            print(f"notebook bundle: {archive} and {archive.with_suffix('')}/", flush=True)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
