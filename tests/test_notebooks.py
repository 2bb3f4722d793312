"""Every chapter notebook: committed clean, and re-executed at ci scale through papermill.

(The same notebooks are also executed by nbval in lax mode: ``pytest ... book --nbval-lax``.)
Each run writes its claims ledger to a private directory; every claim it records must have passed,
and there must be at least one.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import papermill
import pytest

from ntkbook.claims import read_ledgers

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


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_at_ci_scale(path, tmp_path, monkeypatch):
    ledger = tmp_path / "ledger"
    monkeypatch.setenv("NTKBOOK_LEDGER_DIR", str(ledger))
    monkeypatch.setenv("NTKBOOK_PROGRESS", "0")
    out = tmp_path / path.name
    papermill.execute_notebook(str(path), str(out), parameters={"scale": "ci"}, kernel_name="python3",
                               cwd=str(path.parent), progress_bar=False)
    records = read_ledgers(ledger).get(path.stem, [])
    assert records, "the notebook recorded no claims"
    failed = [r["claim"] for r in records if r["status"] != "passed"]
    assert not failed, f"failed claims: {failed}"
    assert {r["scale"] for r in records} == {"ci"}, "papermill's scale parameter did not reach the notebook"
    executed = nbformat.read(out, as_version=4)
    for cell in executed.cells:  # a captioned figure cell must produce exactly one output (one figure)
        if cell.cell_type == "code" and cell.metadata.get("mystnb", {}).get("figure"):
            shown = [o for o in cell.outputs if o.output_type in ("display_data", "execute_result")]
            assert len(shown) == 1 and "image/png" in shown[0].data, f"figure cell shows {len(shown)} outputs"


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
