"""Sphinx extension: ``book/_static/layout.css``, the rules that keep the text column from overflowing.

Wide code, tables, display maths and cell outputs scroll inside their own box; nothing else may be
wider than the column (``tests/reader.py`` checks every page at 1280 px and 390 px).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

STATIC = Path(__file__).resolve().parents[1] / "_static"


def _add_static(app: Sphinx, config: Any) -> None:
    if str(STATIC) not in [str(p) for p in config.html_static_path]:
        config.html_static_path.append(str(STATIC))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _add_static)
    app.add_css_file("layout.css")
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
