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

import ast
import hashlib
import io
import re
import subprocess
import sys
import textwrap
import tokenize
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


# ------------------------------------------------------------------------------------------------
# Wrapping what `ruff format` leaves too long: comments and string literals (make format)
# ------------------------------------------------------------------------------------------------

_PREFIX = re.compile(r"^([rRbBuUfF]*)(['\"])(.*)\2$", re.S)


def _split_points(body: str, is_f: bool) -> list[int]:
    """Indices just after a space where a string body may be split (outside f-string braces)."""
    points, depth, i = [], 0, 0
    while i < len(body):
        ch = body[i]
        if is_f and body.startswith(("{{", "}}"), i) and depth == 0:
            i += 2
            continue
        if is_f and ch == "{":
            depth += 1
        elif is_f and ch == "}":
            depth -= 1
        elif ch == "\\":
            i += 2
            continue
        elif ch == " " and depth == 0 and 0 < i < len(body) - 1:
            points.append(i + 1)
        i += 1
    return points


def _piece(prefix: str, quote: str, body: str) -> str:
    if "f" in prefix.lower() and not re.search(r"(?<!\{)\{(?!\{)", body.replace("{{", "")):
        prefix = prefix.replace("f", "").replace("F", "")  # no placeholder left: a plain string
        body = body.replace("{{", "{").replace("}}", "}")
    return f"{prefix}{quote}{body}{quote}"


def _wrap_string(head: str, prefix: str, quote: str, body: str, tail: str, indent: int,
                 width: int) -> list[str] | None:
    """``head + <string literal> + tail`` as lines of implicitly concatenated pieces split at spaces."""
    pieces, rest, col = [], body, len(head)
    while True:
        room = width - col - len(prefix) - 2  # characters of the body that fit on this line
        if len(rest) <= room - len(tail):
            pieces.append(rest)
            break
        points = [p for p in _split_points(rest, "f" in prefix.lower()) if p <= room]
        if not points:
            return None
        pieces.append(rest[: points[-1]])
        rest = rest[points[-1] :]
        col = indent
    lines = [head + _piece(prefix, quote, pieces[0])]
    lines += [" " * indent + _piece(prefix, quote, p) for p in pieces[1:]]
    lines[-1] += tail
    return lines


def _string_run(tokens: list, i: int, lines: list[str]):
    """The run of implicitly concatenated string literals starting at ``tokens[i]``, each after the first
    alone at the start of its line: ``(last row, prefix, quote, joined body, tail)`` or None."""
    parts = []
    j = i
    while True:
        tok = tokens[j]
        m = _PREFIX.match(tok.string)
        if not m or tok.start[0] != tok.end[0] or tok.string.endswith(('"""', "\'\'\'")):
            return None
        if "r" in m.group(1).lower() or "b" in m.group(1).lower():
            return None
        parts.append((tok, m.group(1), m.group(2), m.group(3)))
        k = j + 1
        while k < len(tokens) and tokens[k].type == tokenize.NL:
            k += 1
        nxt = tokens[k] if k < len(tokens) else None
        if (nxt is not None and nxt.type == tokenize.STRING and nxt.start[0] > tok.end[0]
                and not lines[nxt.start[0] - 1][: nxt.start[1]].strip()
                and tok.end[1] == len(lines[tok.end[0] - 1].rstrip())):
            j = k
            continue
        break
    quotes = {q for _, _, q, _ in parts}
    if len(quotes) != 1:
        return None
    is_f = any("f" in pre.lower() for _, pre, _, _ in parts)
    body = "".join(b if ("f" in pre.lower() or not is_f) else b.replace("{", "{{").replace("}", "}}")
                   for _, pre, _, b in parts)
    last = parts[-1][0]
    tail = lines[last.end[0] - 1][last.end[1] :]
    return last.end[0], "f" if is_f else "", quotes.pop(), body, tail


def _wrap_comment(line: str, col: int, width: int) -> list[str]:
    code, comment = line[:col].rstrip(), line[col:].lstrip("#").strip()
    indent = len(line) - len(line.lstrip())
    text = textwrap.wrap(comment, width=width - indent - 2, break_long_words=False, break_on_hyphens=False)
    above = [" " * indent + "# " + t for t in text]
    return above + ([code] if code else [])


def wrap_long_lines(source: str, width: int = 80) -> str:
    """Wrap comments and string literals of ``source`` that run past ``width`` columns.

    Comments are re-flowed (a trailing comment moves above its line); a string literal inside brackets
    is split at spaces into implicitly concatenated pieces.  The result is kept only if it parses to
    the same abstract syntax tree (the same program); otherwise the cell is returned unchanged.
    """
    try:
        reference = ast.dump(ast.parse(source))
    except SyntaxError:
        return source
    lines = source.split("\n")
    for _ in range(200):
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(lines)).readline))
        changed = False
        for i, tok in enumerate(tokens):
            row, col = tok.start
            line = lines[row - 1] if row - 1 < len(lines) else ""
            if len(line) <= width or tok.end[0] != row:
                continue
            last = row
            if tok.type == tokenize.COMMENT:
                new = _wrap_comment(line, col, width)
            elif tok.type == tokenize.STRING and tok.end[1] > width:
                run = _string_run(tokens, i, lines)
                if run is None:
                    continue
                last, prefix, quote, body, tail = run
                indent = len(line) - len(line.lstrip())
                new = _wrap_string(line[:col], prefix, quote, body, tail, indent, width)
            else:
                continue
            if new and new != lines[row - 1 : last]:
                candidate = lines[: row - 1] + new + lines[last:]
                try:
                    same = ast.dump(ast.parse("\n".join(candidate))) == reference
                except SyntaxError:
                    same = False
                if same:
                    lines, changed = candidate, True
                    break
        if not changed:
            break
    return "\n".join(lines)


def wrap(paths: list[Path], width: int = 80) -> None:
    """Apply :func:`wrap_long_lines` to every code cell of the notebooks ``paths``."""
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        changed = False
        for cell in nb.cells:
            if cell.cell_type == "code":
                new = wrap_long_lines(cell.source, width)
                changed |= new != cell.source
                cell.source = new
        if changed:
            nbformat.write(nb, path)
            print(f"wrapped long lines in {path.relative_to(ROOT)}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["sync"]:
        sync([Path(p).resolve() for p in argv[1:]] or None)
        return 0
    if argv[:1] == ["wrap"]:
        wrap([Path(p).resolve() for p in argv[1:]] or chapters())
        return 0
    if argv[:1] == ["check"]:
        problems = check()
        print("\n".join(problems) or "every chapter is in normal form and agrees with its twin")
        return 1 if problems else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
