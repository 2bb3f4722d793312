"""The page reader of ``tests/test_book.py`` catches what it should: a tiny book is built with one defect
planted per page (a missing verdict line, no claims, a formula and a code line wider than the column, a
printed repr, an incomplete ledger, ...) and read in headless Chromium like the real book; each defect must
be reported and the clean page must pass.  In its own file so that pytest-xdist (``--dist loadfile``) runs
it beside the real book's pages instead of after them."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import nbformat
import test_book
import yaml
from test_book import ROOT, build, read_page, serve

browser = test_book.browser  # the headless-Chromium fixture of the real book's reader


# ---------------------------------------------------------------------------------------------------
# The reader catches what it should: a tiny book, one planted defect per page
# ---------------------------------------------------------------------------------------------------

_PNG = None


def png() -> str:
    """A small matplotlib figure as base64 PNG (made once); also used by tests/test_editions_print.py."""
    global _PNG
    if _PNG is None:
        import io

        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(3, 2), dpi=60)
        ax.plot([0, 1], [0, 1])
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        plt.close(fig)
        _PNG = base64.b64encode(buf.getvalue()).decode()
    return _PNG


def notebook(markdown: str, cells: list[tuple[dict, list[dict]]]) -> nbformat.NotebookNode:
    """A notebook of one Markdown cell and code cells with the given metadata and outputs (not executed)."""
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells.append(nbformat.v4.new_markdown_cell(markdown))
    for metadata, outputs in cells:
        cell = nbformat.v4.new_code_cell("pass", metadata=metadata)
        cell.outputs = [nbformat.from_dict(o) for o in outputs]
        cell.execution_count = 1
        nb.cells.append(cell)
    return nb


def _notebook(title: str, outputs_cells: list[tuple[dict, list[dict]]], markdown: str = "") -> nbformat.NotebookNode:
    return notebook(f"# {title}\n\n{markdown}", outputs_cells)


def display(data: dict) -> dict:
    return {"output_type": "display_data", "data": data, "metadata": {}}


WIDE_MATH = " + ".join(f"x_{{{i}}}^{{2}}" for i in range(90))
PLANTED = {
    # page: (categories it must show, how)
    "book/00-clean": set(),
    "book/01-no-verdict": {"verdict"},
    "book/02-no-claims": {"verdict"},
    "book/wide-formula": {"overflow"},
    "book/wide-code": {"overflow"},
    "book/wide-table": {"table"},
    "book/overflow": {"overflow"},
    "book/narrow-overflow": {"overflow"},
    "book/raw-dict": {"repr"},
    "book/no-caption": {"caption"},
    "book/bad-math": {"math"},
    "book/broken-link": {"link"},
    "book/placeholder": {"placeholder"},
    "book/claims-ledger": {"ledger"},
    "book/index-of-results": {"index"},
}
PLANTED_MAY_ALSO: dict[str, set[str]] = {}
# the claims of the planted build; the planted ledger holds only those of 00-clean (an incomplete ledger)
PLANTED_CLAIMS = {"00-clean": ["demo/bound-holds"], "01-no-verdict": ["demo/rate-in-window"], "02-no-claims": []}
PLANTED_LEDGER = {"claim": "demo/bound-holds", "ref": "book, demo", "label": "demo", "kind": "bound",
                  "criterion": "ratio ≤ 1 on 1 sample; worst 0.93", "measured": {"worst_ratio": 0.93},
                  "status": "passed", "scale": "ci", "notebook": "00-clean"}


def make_planted_book(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    book = out / "book"
    book.mkdir()
    for name in ("_ext", "_static", "_data"):
        if (ROOT / "book" / name).exists():
            shutil.copytree(ROOT / "book" / name, book / name)
    shutil.copy(ROOT / "book" / "references.bib", book / "references.bib")
    toc = {"format": "jb-book", "root": "book/intro",
           "parts": [{"caption": "Planted", "chapters": [{"file": p} for p in PLANTED]}]}
    (out / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    (book / "intro.md").write_text("# Planted defects\n\nOne defect per page; the first page has none.\n")
    verdict = display({"text/html": '<div class="ntkbook-verdict">PASSED <code>demo/bound-holds</code> '
                                     "[bound] ratio ≤ 1: worst 0.93</div>",
                        "text/plain": "PASSED  demo/bound-holds  [bound]  ratio ≤ 1: worst 0.93"})
    figure = ({"mystnb": {"figure": {"caption": "A captioned figure.", "name": "fig-clean"}}},
              [display({"image/png": png(), "text/plain": "<Figure size 180x120 with 1 Axes>"})])
    fit_table = ('<div class="ntkbook-table-wrap"><table class="ntkbook-table"><thead><tr><th>m</th>'
                 "<th>‖w* − w₀‖</th></tr></thead><tbody><tr><td>64</td><td>1.23</td></tr></tbody></table></div>")
    wide_table = ('<div class="ntkbook-table-wrap"><table class="ntkbook-table"><thead><tr><th>max_param_difference'
                  "</th>" + "".join(f"<th>column {i}</th>" for i in range(40)) + "</tr></thead></table></div>")
    # a Markdown table and a wide output other than a table may scroll in their own box; formulas, code and the
    # tables a chapter computes must fit at 1280 px (on a phone they may scroll in their own box)
    fit_math = " + ".join(f"x_{{{i}}}^{{2}}" for i in range(12))
    clean_md = ("Inline maths $x^2$, a [link to another page](overflow.md), a code block, a wide "
                "table and a display formula.\n\n"
                "```python\nx = 1  # a comment that fits the column\n```\n\n"
                "| " + " | ".join(f"h{i}" for i in range(30)) + " |\n|" + "---|" * 30 + "\n| "
                + " | ".join(f"value{i}" for i in range(30)) + " |\n\n"
                f"$$\n{fit_math}\n$$\n")
    nbformat.write(_notebook("A clean chapter", [({}, [verdict]), figure,
                                                  ({}, [display({"text/html": fit_table, "text/plain": "table"})])],
                             clean_md), book / "00-clean.ipynb")
    nbformat.write(_notebook("A computed table wider than the column",
                             [({}, [display({"text/html": wide_table, "text/plain": "table"})])]),
                   book / "wide-table.ipynb")
    nbformat.write(_notebook("A chapter without its verdict line",
                             [({}, [{"output_type": "stream", "name": "stdout", "text": "done\n"}])]),
                   book / "01-no-verdict.ipynb")
    nbformat.write(_notebook("A chapter that records no claim", [({}, [verdict])]), book / "02-no-claims.ipynb")
    (book / "wide-formula.md").write_text(f"# A formula wider than the column\n\n$$\n{WIDE_MATH}\n$$\n")
    (book / "wide-code.md").write_text("# Code wider than the column\n\n```python\nx = 1  # "
                                       + "a long comment " * 20 + "\n```\n")
    nbformat.write(_notebook("A printed dict", [({}, [{"output_type": "execute_result", "execution_count": 1,
                                                        "metadata": {},
                                                        "data": {"text/plain": "{'eq28_max_rel_error': 0.0123}"}}]),
                                               ({}, [{"output_type": "stream", "name": "stdout",
                                                      "text": "settings: Bottleneck(width=1000, runs=2)\n"}])]),
                   book / "raw-dict.ipynb")
    nbformat.write(_notebook("A figure without a caption", [({}, [display({"image/png": png()})])]),
                   book / "no-caption.ipynb")
    (book / "overflow.md").write_text('# Overflow\n\n<div style="width: 1500px">a block wider than the column</div>\n')
    (book / "narrow-overflow.md").write_text(
        '# Overflow on a phone\n\n<div style="width: 560px">fits a laptop column, not a phone</div>\n')
    (book / "bad-math.md").write_text("# Maths that does not render\n\nA formula with a TeX error: $\\frac{1}$.\n")
    (book / "broken-link.md").write_text('# A broken link\n\n<a href="no-such-page.html">nowhere</a>\n')
    (book / "placeholder.md").write_text("# A placeholder\n\nRun time: not measured yet.\n")
    (book / "claims-ledger.md").write_text("# Claims ledger\n\n```{claims-ledger}\n```\n")
    (book / "index-of-results.md").write_text("# Index of results\n\nNothing here yet.\n")
    return out


def test_reader_catches_planted_defects(browser, tmp_path):
    out = make_planted_book(tmp_path / "planted")
    (out / "ledger").mkdir()  # an incomplete ledger: the claims of 00-clean only
    (out / "ledger" / "00-clean.jsonl").write_text(json.dumps(PLANTED_LEDGER, sort_keys=True) + "\n")
    html = build(out, strict=False)
    server, base = serve(html)
    try:
        found = {}
        for page_name, expected in PLANTED.items():
            problems, page = read_page(browser, base, html, page_name, claims=PLANTED_CLAIMS)
            page.close()
            found[page_name] = problems
            categories = {p.category for p in problems}
            assert expected <= categories <= expected | PLANTED_MAY_ALSO.get(page_name, set()), (f"{page_name}: expected {expected or 'no problem'}, got\n"
                                            + "\n".join(map(str, problems)))
        assert all("at 390 px" in p.message for p in found["book/narrow-overflow"])
        # a dict at the start of a line and a dataclass repr in the middle of one
        assert sum(p.category == "repr" for p in found["book/raw-dict"]) == 2, found["book/raw-dict"]
        # the incomplete ledger: the claims of 01-no-verdict are missing, those of 00-clean are listed
        assert any("01-no-verdict" in p.message and "00-clean" not in p.message
                   for p in found["book/claims-ledger"]), found["book/claims-ledger"]
        assert any("formula" in p.message for p in found["book/wide-formula"])
        assert any("code" in p.message for p in found["book/wide-code"])
        assert any("at 1280 px" in p.message for p in found["book/overflow"])
    finally:
        server.shutdown()
