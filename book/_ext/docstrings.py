"""Sphinx extension: make the package's maths-heavy docstrings valid reStructuredText.

The docstrings write absolute values and norms as ``|x|`` (plain-text maths, readable in ``help()``);
in reStructuredText ``|name|`` is a substitution reference.  Before napoleon and autodoc parse a
docstring, every ``|`` outside ````literal```` spans is escaped.  A constant's docstring is prose, also
when its first line reads "X: Y" (:func:`prose_first_line`).
"""

from __future__ import annotations

import re
from typing import Any

from sphinx.application import Sphinx

_LITERAL = re.compile(r"(``.*?``)")


def escape_bars(line: str) -> str:
    parts = _LITERAL.split(line)
    return "".join(p if p.startswith("``") else re.sub(r"(?<!\\)\|", r"\\|", p) for p in parts)


_SINGLE_COLON = re.compile(r"(?<!:):(?!:)")


def prose_first_line(what: str, lines: list[str]) -> list[str]:
    """A data or attribute docstring is prose, but napoleon reads a first line "X: Y" as the type X and
    the description Y (and ``-n`` then looks X up as a class).  An empty comment line (``..``, then a
    blank line) put first is what napoleon takes for the description's first line instead; it renders as
    nothing."""
    if what in ("data", "attribute") and lines and lines[0].strip():
        outside = "".join(p for p in _LITERAL.split(lines[0]) if not p.startswith("``"))
        if _SINGLE_COLON.search(re.sub(r":[\w:]+:`[^`]*`", "", outside)):
            return ["..", "", *lines]
    return lines


def _process(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    lines[:] = prose_first_line(what, [escape_bars(line) for line in lines])


def setup(app: Sphinx) -> dict[str, Any]:
    # priority < 500: run before napoleon turns Google sections into fields
    app.connect("autodoc-process-docstring", _process, priority=100)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
