"""Every chapter notebook as committed: no outputs, one ``parameters`` cell, visible check cells,
captioned figures, labelled theorem-like blocks.

The notebooks are executed twice by ``make test``: through papermill in ``tests/test_book.py`` (whose
executed copies are then rendered and read in a browser) and by nbval in lax mode
(``pytest ... book --nbval-lax``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))


def test_there_are_chapters():
    assert len(NOTEBOOKS) >= 2


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_clean(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), "outputs are committed"
    tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, "exactly one cell must be tagged 'parameters'"
    assert 'scale = os.environ.get("NTKBOOK_SCALE", "book")' in "".join(tagged[0]["source"])
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    for c in nb["cells"]:  # a check cell is never hidden
        src = "".join(c["source"])
        if "claims.check" in src:
            assert not {"hide-input", "hide-cell", "remove-cell", "remove-input"} & set(c["metadata"].get("tags", []))
        fig = c.get("metadata", {}).get("mystnb", {}).get("figure")
        if fig is not None:
            assert fig.get("caption") and fig.get("name"), "every figure has a caption and a name"


def _markdown_sources():
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                yield path.name, "".join(cell["source"])
    for path in sorted((ROOT / "book").glob("*.md")):
        yield path.name, path.read_text()


def test_every_theorem_like_block_has_a_label_and_every_figure_a_caption():
    import re

    missing = []
    for name, text in _markdown_sources():
        for match in re.finditer(r"^(`{3,}|:{3,})\{(prf:[a-z]+|figure)\}([^\n]*)\n(.*?)^\1\s*$", text, re.S | re.M):
            kind, title, body = match.group(2), match.group(3).strip(), match.group(4)
            if kind == "prf:proof":
                continue
            if kind.startswith("prf:") and not re.search(r"^:label:\s*\S+", body, re.M):
                missing.append(f"{name}: {{{kind}}} {title!r} has no :label:")
            if kind == "figure":
                caption = [line for line in body.splitlines() if line.strip() and not line.startswith(":")]
                if not caption:
                    missing.append(f"{name}: figure {title!r} has no caption")
    assert not missing, "\n".join(missing)
