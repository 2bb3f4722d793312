"""Every chapter notebook as committed: no outputs, one ``parameters`` cell, visible check cells whose
outputs nbval compares, captioned figures, labelled theorem-like blocks; in normal form and in
agreement with its MyST twin (``tests/notebook_format.py``).

``make test`` executes each chapter once with papermill (``tests/execute_chapters.py``); the book is
rendered from those outputs (``tests/test_book.py``) and nbval re-executes executed copies in lax
mode (one chapter in ``make test``, every chapter in ``make test-determinism``), comparing the outputs of
the cells tagged ``nbval-check-output`` — every cell that records a claim — and the claims ledger with
papermill's: the suite's own proof that two executions give the same claim numbers.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat
import notebook_format
import pytest

from ntkbook import claims

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
        if claims.calls_claims(src):
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


# A cell that records a claim calls a function of ntkbook.claims (nb.claims.bound(...), ...).
CLAIM_CALL = re.compile(r"\bclaims\.[A-Za-z_]\w*\(")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_claim_cell_is_output_checked_by_nbval(path):
    nb = json.loads(path.read_text())
    checks = [c for c in nb["cells"] if c["cell_type"] == "code" and CLAIM_CALL.search("".join(c["source"]))]
    assert checks, "a chapter without check cells"
    untagged = ["".join(c["source"]).strip().splitlines()[0] for c in checks
                if "nbval-check-output" not in c["metadata"].get("tags", [])]
    assert not untagged, f"check cells without the tag nbval-check-output: {untagged}"
    tagged_elsewhere = [c for c in nb["cells"] if "nbval-check-output" in c.get("metadata", {}).get("tags", [])
                        and c not in checks]
    assert not tagged_elsewhere, "only cells that record claims print the numbers nbval compares"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_in_normal_form(path):
    assert notebook_format.is_normal(path), f"{path.name} is not in normal form: run `make sync`"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_agrees_with_its_twin(path):
    assert not notebook_format.pair_differences(path), notebook_format.pair_differences(path)


def test_pair_check_catches_each_kind_of_disagreement(tmp_path):
    """Plant one disagreement at a time (source, tags, mystnb metadata, a missing cell) in a copy."""
    src = NOTEBOOKS[0]
    (tmp_path / "myst").mkdir()
    nb_path, md_path = tmp_path / src.name, tmp_path / "myst" / f"{src.stem}.md"
    shutil.copy(src, nb_path)
    import jupytext

    def plant(edit) -> list[str]:
        shutil.copy(notebook_format.twin(src), md_path)
        md = jupytext.read(md_path)
        edit(md)
        jupytext.write(md, md_path, fmt="md:myst")
        return notebook_format.pair_differences(nb_path)

    assert plant(lambda md: None) == []
    code = next(i for i, c in enumerate(nbformat.read(src, as_version=4).cells) if c.cell_type == "code")
    fig = next(i for i, c in enumerate(nbformat.read(src, as_version=4).cells) if c.metadata.get("mystnb"))

    def source(md):
        md.cells[code].source += "\nx = 1"

    def tags(md):
        md.cells[code].metadata["tags"] = [*md.cells[code].metadata.get("tags", []), "hide-input"]

    def mystnb(md):
        md.cells[fig].metadata["mystnb"]["figure"]["caption"] = "another caption"

    def missing(md):
        del md.cells[code]

    for edit, what in ((source, "source"), (tags, "tags"), (mystnb, "mystnb"), (missing, "cells")):
        problems = plant(edit)
        assert problems and what in problems[0], (what, problems)


def test_normal_form_is_a_function_of_the_content(tmp_path):
    """Ids come from the cells, metadata churn is dropped, and normalizing twice changes nothing."""
    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.9"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"random{i}"
        cell.metadata["collapsed"] = True
        if cell.cell_type == "code":
            cell.execution_count = i
            cell.outputs = [nbformat.v4.new_output("stream", text="x\n")]
    text = notebook_format.normal_text(nb)
    assert text == NOTEBOOKS[0].read_text()
    assert notebook_format.normal_text(nbformat.reads(text, as_version=4)) == text


def test_wrap_long_lines_keeps_the_program():
    """`make format` wraps the comments and strings ruff format leaves long, never changing the code."""
    import ast

    src = (
        "def f(x, y):\n"
        "    # " + "a long comment that goes on " * 4 + "\n"
        "    return g(\n"
        "        caption=f\"the value {x:.3f} of the first and {y['k']:.2g} of the second quantity, \"\n"
        "        \"measured on every sample\",\n"
        "    )  # a trailing comment that is long enough to push the closing line past the limit\n"
    )
    out = notebook_format.wrap_long_lines(src, width=60)
    assert max(map(len, out.splitlines())) <= 60
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(src))
    assert "{x:.3f}" in out and "{y['k']:.2g}" in out  # placeholders are never split
    unsplittable = "x = 'a_single_word_that_cannot_be_split_anywhere_at_all_because_it_has_no_space'\n"
    assert notebook_format.wrap_long_lines(unsplittable, width=40) == unsplittable
    assert notebook_format.wrap_long_lines("%matplotlib inline\n", width=10) == "%matplotlib inline\n"
