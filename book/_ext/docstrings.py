"""Sphinx extension: make the package's maths-heavy docstrings valid reStructuredText.

The docstrings write absolute values and norms as ``|x|`` (plain-text maths, readable in ``help()``);
in reStructuredText ``|name|`` is a substitution reference.  Before napoleon and autodoc parse a
docstring, every ``|`` outside ````literal```` spans is escaped.
"""

from __future__ import annotations

import re
from typing import Any

from sphinx.application import Sphinx

_LITERAL = re.compile(r"(``.*?``)")


def escape_bars(line: str) -> str:
    parts = _LITERAL.split(line)
    return "".join(p if p.startswith("``") else re.sub(r"(?<!\\)\|", r"\\|", p) for p in parts)


def _process(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    lines[:] = [escape_bars(line) for line in lines]


def setup(app: Sphinx) -> dict[str, Any]:
    # priority < 500: run before napoleon turns Google sections into fields
    app.connect("autodoc-process-docstring", _process, priority=100)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
