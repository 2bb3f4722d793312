"""The generated Reference pages (Claims ledger, Index of results, Errata) and the run-time box, built
by Sphinx from a synthetic ledger and synthetic index data (no notebook is executed).

A tiny project: one chapter notebook with a labelled proposition, a check cell with an output and
papermill metadata (as the test suite's pre-executed notebooks have), the three pages.  The ledger is
written through ``ntkbook.claims`` itself.  Also: every claim ref recorded in a real ledger directory
names a row of the book's index data.
"""

from __future__ import annotations

import io
import json
import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ntkbook import claims

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "book" / "_ext"
P = "Liu–Zhu–Belkin 2020"


def _notebook(executed: bool) -> dict:
    cells = [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": textwrap.dedent("""\
            # Chapter one

            ```{chapter-runtime}
            ```

            ```{prf:proposition} Small Hessian, small kernel change (Prop. 2.3)
            :label: prop-2-3

            If the Hessian is small in a ball, the kernel changes little.
            ```
            """)},
        {"cell_type": "code", "id": "experiment", "metadata": {}, "execution_count": 1 if executed else None,
         "source": 'def kernel_change(key, width):\n    """ΔK of Prop. 2.3."""\n    return {"dK": 1.0 / width}',
         "outputs": []},
        {"cell_type": "code", "id": "check", "metadata": {}, "execution_count": 1 if executed else None,
         "source": 'nb.claims.bound("prop-2.3/bound-holds", m, b, ref="Liu–Zhu–Belkin 2020, Prop. 2.3", '
                   'label="prop-2-3")',
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "PASSED  prop-2.3/bound-holds\n"}]
         if executed else []},
    ]
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"}}
    if executed:
        meta["papermill"] = {"duration": 12.3, "parameters": {"scale": "ci"}}
    return {"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}


INDEX = textwrap.dedent("""\
    paper: liu2020
    citation: Liu–Zhu–Belkin 2020
    bibkey: liu2020linearity
    results:
      - ref: "Prop. 2.3"
        kind: proposition
        title: "Small Hessian implies small change of the tangent kernel"
        statement: "If ||H(w)|| < eps on B(w0, R) then |K(w) - K(w0)| = O(eps R)"
        where: "Section 2.2"
        chapter: 01-chapter
        label: prop-2-3
        measured_by: [ntkbook.norms.norm_221, "01-chapter:kernel_change"]
        coverage: measured
        note: ""
        erratum: "Eq. 7 drops the gradient norms: the proof gives epsR times their sum."
      - ref: "supp. Lemma F.1"
        kind: lemma
        title: "Spectral norms of initial weight matrices"
        statement: "||W0|| <= 3 sqrt(m)"
        where: "Supplement, Appendix F"
        chapter: null
        label: null
        measured_by: []
        coverage: not-covered
        note: "A random-matrix fact used in a proof; not measured."
        erratum: "The proof cites a bound with constant 2 where it uses 3."
    """)


def _write_ledger(directory: Path, *, unknown_ref: bool = False, witness_kind: str = "bound") -> None:
    old = os.environ.get("NTKBOOK_LEDGER_DIR")
    os.environ["NTKBOOK_LEDGER_DIR"] = str(directory)
    try:
        claims.start("01-chapter", scale="ci")
        claims.bound("prop-2.3/bound-holds", [0.1, 0.2], [1.0, 1.0], ref=f"{P}, Prop. 2.3", label="prop-2-3")
        if witness_kind == "bound":  # the same claim function judging the paper-scale archive
            claims.bound("prop-2.3/archive/bound-holds", [0.3, 0.4, 0.5], [1.0, 1.0, 1.0], ref=f"{P}, Prop. 2.3",
                         label="prop-2-3")
        else:
            claims.condition("prop-2.3/archive/bound-holds", True, criterion="the archive looks fine",
                             ref=f"{P}, Prop. 2.3", label="prop-2-3")
        claims.identity("prop-2.3/identity", 1.0, 1.0, rtol=1e-12, ref=f"{P}, Prop. 2.3", label="prop-2-3")
        claims.illustration("prop-2.3/loose-bound", True, criterion="measured ≤ bound; worst ratio 0.01",
                            why="the bound is 100 times too loose to fail", ref=f"{P}, Prop. 2.3", label="prop-2-3")
        m = np.repeat([64.0, 256.0, 1024.0, 4096.0], 3)
        claims.rate("prop-2.3/relu-rate", m, m**-0.75 * np.exp(0.01 * np.sin(m)), predicted=-0.75,
                    window=(-0.85, -0.65), rivals={"m^-1/2": -0.5}, allowance="±0.1", ref="book, ReLU kernel change",
                    label="prop-2-3", erratum="The paper's rate m^-1/2 does not hold for ReLU: it is m^-3/4.")
        claims.condition("prop-2.3/condition", True, criterion="the widths increase", ref=f"{P}, Prop. 2.3",
                         label="prop-2-3", n=1)
        if unknown_ref:
            claims.bound("x/unknown", [1.0], [2.0], ref=f"{P}, Thm 9.9", label="prop-2-3")
    finally:
        if old is None:
            os.environ.pop("NTKBOOK_LEDGER_DIR", None)
        else:
            os.environ["NTKBOOK_LEDGER_DIR"] = old


def build(tmp_path: Path, *, ledger: str = "full", executed: bool = True, execute: bool = False, index: str = INDEX,
          strict: bool = False) -> tuple[Path, str]:
    """Build the tiny project; return (html dir, warnings).  ``execute``: myst-nb runs the notebook
    (a real check cell recording into the ledger) instead of reading pre-computed outputs."""
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    src.mkdir(parents=True)
    notebook = _notebook(executed and not execute)
    if execute:
        notebook["cells"][1]["source"] = textwrap.dedent("""\
            from ntkbook import claims
            claims.start("01-chapter", scale="ci")
            claims.bound("prop-2.3/bound-holds", [0.1, 0.2], [1.0, 1.0], ref="Liu–Zhu–Belkin 2020, Prop. 2.3",
                         label="prop-2-3")
            """)
    (src / "01-chapter.ipynb").write_text(json.dumps(notebook))
    (src / "index.md").write_text("# Book\n\n```{toctree}\n01-chapter\nclaims-ledger\nindex-of-results\nerrata\n```\n")
    (src / "claims-ledger.md").write_text("# Claims ledger\n\n```{claims-ledger}\n```\n")
    (src / "index-of-results.md").write_text("# Index of results\n\n```{results-index}\n```\n")
    (src / "errata.md").write_text("# Errata\n\n```{errata}\n```\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "liu2020.yaml").write_text(index)
    led = tmp_path / "ledger"
    led.mkdir()
    if ledger == "full":
        _write_ledger(led)
    elif ledger == "witness-kind":
        _write_ledger(led, witness_kind="condition")
    elif ledger == "unknown-ref":
        _write_ledger(led, unknown_ref=True)
    elif ledger == "empty-file":
        (led / "01-chapter.jsonl").write_text("")
    elif ledger == "corrupt":
        _write_ledger(led)
        with (led / "01-chapter.jsonl").open("a") as f:
            f.write('{"claim": "cut/short", "status": "pas\n')
    (src / "conf.py").write_text(textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(EXT)!r})
        extensions = ["myst_nb", "sphinx_proof", "claims_ledger", "results_index", "runtimes"]
        nb_execution_mode = {"force" if execute else "off"!r}
        nb_execution_timeout = 600  # importing ntkbook (JAX) in a fresh kernel took over 30 s on a loaded machine
        numfig = True
        ntkbook_ledger_dir = {str(led)!r}
        ntkbook_results_dir = {str(data)!r}
        ntkbook_index_strict = {strict!r}
        exclude_patterns = ["_build"]
        """))
    warnings = io.StringIO()
    out = tmp_path / "html"
    sys.path.insert(0, str(EXT))
    old_dir = os.environ.get("NTKBOOK_LEDGER_DIR")
    os.environ["NTKBOOK_LEDGER_DIR"] = str(led)  # the kernel of an executed notebook records here
    try:
        app = Sphinx(str(src), str(src), str(out), str(tmp_path / "doctrees"), "html", status=None,
                     warning=warnings, freshenv=True)
        app.build()
    finally:
        sys.path.remove(str(EXT))
        if old_dir is None:
            os.environ.pop("NTKBOOK_LEDGER_DIR", None)
        else:
            os.environ["NTKBOOK_LEDGER_DIR"] = old_dir
    return out, warnings.getvalue()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build(tmp_path_factory.mktemp("pages"))


def test_ledger_page_lists_every_claim_of_the_build(site):
    out, warnings = site
    assert "ntkbook" not in warnings, warnings
    page = (out / "claims-ledger.html").read_text()
    for claim in ("prop-2.3/bound-holds", "prop-2.3/identity", "prop-2.3/loose-bound", "prop-2.3/relu-rate",
                  "prop-2.3/condition"):
        assert claim in page
    assert "6 claims were checked in this build (scale ci): 4 passed, 0 failed, 0 inconclusive" in page
    assert "1 identity and 1 other check shown as illustrations, not counted as evidence" in page
    assert "identity, illustration" in page and "[illustration]" in page
    assert "No claims were recorded" not in page
    assert 'href="01-chapter.html#prop-2-3"' in page  # each claim links to its statement block
    assert "ntkbook-badge ntkbook-passed" in page
    assert "ntkbook.css" in page


def test_the_archives_verdict_is_shown_beside_the_claim_it_witnesses(site):
    out, _ = site
    page = (out / "claims-ledger.html").read_text()
    assert "The archive as a witness: 1 claim of this build is also judged" in page
    assert "agrees with the build's for 1 of them" in page
    row = page[page.index("<span class=\"pre\">prop-2.3/bound-holds</span>"):]
    row = row[:row.index("</tr>")]
    assert "archive (paper scale):" in row and "prop-2.3/archive/bound-holds" in row and "worst_ratio = 0.5" in row


def test_a_witness_judged_by_another_claim_function_fails_the_build(tmp_path):
    _, warnings = build(tmp_path, ledger="witness-kind")
    assert "the archive witness 'prop-2.3/archive/bound-holds' differs from the claim it witnesses" in warnings
    assert "in kind" in warnings


def test_index_rows_are_joined_with_their_claims(site):
    out, _ = site
    page = (out / "index-of-results.html").read_text()
    row = page[page.index("Prop. 2.3"):page.index("supp. Lemma F.1")]
    assert 'href="01-chapter.html#prop-2-3"' in row
    assert "prop-2.3/bound-holds" in row and "prop-2.3/identity" in row and "prop-2.3/condition" in row
    assert "prop-2.3/relu-rate" not in row  # its ref is the book's own result
    assert "norms.norm_221" in row
    # a chapter's experiment: the link goes to the cell that defines the function, which carries the anchor
    assert 'href="01-chapter.html#experiment-kernel-change"' in row and ">kernel_change<" in row
    assert 'id="experiment-kernel-change"' in (out / "01-chapter.html").read_text()
    assert "not covered: A random-matrix fact used in a proof; not measured." in page
    own = page[page.index("own results"):]
    assert "ReLU kernel change" in own and "prop-2.3/relu-rate" in own
    assert "not in the index" not in page  # every claim's ref names a row or is the book's own


def test_errata_page_lists_the_claims_with_an_erratum(site):
    out, _ = site
    page = (out / "errata.html").read_text()
    assert "3 errata: 1 documented by a claim checked in this build, 2 shown in the text or the index" in page
    measured = page[page.index("Measured in this build"):page.index("Shown in the text")]
    assert "The paper’s rate m^-1/2 does not hold for ReLU" in measured or "The paper's rate m^-1/2" in measured
    assert "prop-2.3/relu-rate" in measured and "prop-2.3/bound-holds" not in page


def test_errata_page_lists_the_index_rows_with_an_erratum_and_where_they_are_shown(site):
    out, _ = site
    page = (out / "errata.html").read_text()
    shown = page[page.index("Shown in the text"):]
    first, second = shown.index("Eq. 7 drops the gradient norms"), shown.index("cites a bound with constant 2")
    assert first < second  # in the order of the index
    assert 'href="01-chapter.html#prop-2-3"' in shown[:second]  # where it is shown: its statement block
    assert "Liu–Zhu–Belkin 2020, supp. Lemma F.1" in shown
    assert "Index of results (row supp. Lemma F.1 of Liu–Zhu–Belkin 2020); not in a chapter" in shown[first:]
    assert shown.count("not measured") == 2


def test_runtime_box_reports_this_builds_execution(site):
    out, _ = site
    page = (out / "01-chapter.html").read_text()
    assert "executed at ci scale in 12 s (papermill, for this build)." in page
    assert "not measured yet" not in page


def test_a_notebook_executed_by_the_build_fills_the_ledger_and_the_runtime_box(tmp_path):
    out, warnings = build(tmp_path, ledger="none", execute=True)
    assert "ntkbook" not in warnings, warnings
    page = (out / "claims-ledger.html").read_text()
    assert "1 claim was checked in this build (scale ci): 1 passed" in page and "prop-2.3/bound-holds" in page
    chapter = (out / "01-chapter.html").read_text()
    assert "executed at ci scale in" in chapter and "when this book was built." in chapter
    assert "ntkbook-badge ntkbook-passed" in chapter  # the verdict's HTML output


def test_missing_or_empty_ledger_fails_the_build(tmp_path):
    _, warnings = build(tmp_path / "none", ledger="none")
    assert "claims ledger incomplete: chapter '01-chapter' has check cells and was executed" in warnings
    _, warnings = build(tmp_path / "empty", ledger="empty-file")
    assert "its ledger is empty" in warnings


def test_a_corrupt_ledger_stops_the_build(tmp_path):
    from sphinx.errors import SphinxError

    with pytest.raises(SphinxError, match=r"01-chapter\.jsonl, line 7 is not valid JSON") as info:
        build(tmp_path, ledger="corrupt")
    assert "corrupt" in str(info.value)


def test_a_chapter_not_executed_for_this_build_needs_no_claims(tmp_path):
    out, warnings = build(tmp_path, ledger="none", executed=False)
    assert "ledger incomplete" not in warnings
    page = (out / "claims-ledger.html").read_text()
    assert "No chapter with check cells was executed for this build" in page
    assert "not executed for this build" in (out / "01-chapter.html").read_text()


def test_a_measured_by_experiment_the_chapter_does_not_define_is_a_warning(tmp_path):
    _, warnings = build(tmp_path, index=INDEX.replace("01-chapter:kernel_change", "01-chapter:no_such_function"))
    assert "measured_by names '01-chapter:no_such_function', but chapter '01-chapter' defines no function" in warnings


def test_a_claim_whose_ref_names_no_row_is_a_warning(tmp_path):
    out, warnings = build(tmp_path, ledger="unknown-ref")
    assert "ref 'Liu–Zhu–Belkin 2020, Thm 9.9' names no row of the index" in warnings
    assert "names no row" not in warnings.replace("ref 'Liu–Zhu–Belkin 2020, Thm 9.9' names no row", "")
    page = (out / "index-of-results.html").read_text()
    assert "x/unknown" in page[page.index("not in the index"):]


STRICT_ROWS = textwrap.indent(textwrap.dedent("""\
      - ref: "Eq. 7"
        kind: equation
        title: "Prop. 2.3"
        statement: "|K(w) - K(w0)| = O(eps R)"
        where: "Section 2.2"
        chapter: 01-chapter
        label: prop-2-3
        measured_by: []
        coverage: measured
        note: ""
        claims: [prop-2.3/bound-*]
      - ref: "Eq. 8"
        kind: equation
        title: "An identity"
        statement: "a = a"
        where: "Section 2.2"
        chapter: 01-chapter
        label: null
        measured_by: []
        coverage: measured
        note: ""
        claims: [prop-2.3/identity]
      - ref: "Eq. 9"
        kind: equation
        title: "Another"
        statement: "b = b"
        where: "Section 2.2"
        chapter: 01-chapter
        label: null
        measured_by: []
        coverage: illustrated
        note: ""
        claims: [prop-2.3/no-such-*]
    """), "  ")


def test_strict_index_needs_evidence_for_a_measured_row_and_live_claim_links(tmp_path):
    out, warnings = build(tmp_path, index=INDEX + STRICT_ROWS, strict=True)
    problems = [line for line in warnings.splitlines() if "index of results" in line]
    assert len(problems) == 2, warnings
    assert any("'Liu–Zhu–Belkin 2020, Eq. 8' is marked measured" in p and "evidence" in p for p in problems)
    assert any("'Liu–Zhu–Belkin 2020, Eq. 9' names claims 'prop-2.3/no-such-*'" in p for p in problems)
    page = (out / "index-of-results.html").read_text()
    row = page[page.index("Eq. 7</strong>"):page.index("Eq. 8</strong>")]
    assert "prop-2.3/bound-holds" in row  # linked through the row's claims pattern
    assert "prop-2.3/identity" not in row and "prop-2.3/condition" not in row
    _, warnings = build(tmp_path / "lax", index=INDEX + STRICT_ROWS, strict=False)
    assert "is marked measured" not in warnings and "names claims" not in warnings


def test_the_books_build_is_strict():
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["config"]["ntkbook_index_strict"] is True


# ---------------------------------------------------------------------------------------------
# Real data and ledgers
# ---------------------------------------------------------------------------------------------


def _results_index():
    sys.path.insert(0, str(EXT))
    try:
        import results_index
    finally:
        sys.path.remove(str(EXT))
    return results_index


def test_a_malformed_erratum_field_is_a_problem(tmp_path):
    ri = _results_index()
    (tmp_path / "liu2020.yaml").write_text(INDEX.replace('erratum: "The proof cites a bound with constant 2 where it '
                                                         'uses 3."', 'erratum: ""'))
    _, problems = ri.load_index(tmp_path)
    assert problems == ["liu2020.yaml: 'supp. Lemma F.1': erratum must be a non-empty text (leave the field out "
                        "when there is none)"]


#: Errata the book documents in its text or index notes without a claim (issue 15): each must have an
#: ``erratum`` field, so that the Errata page lists it.
DOCUMENTED_ERRATA = {
    "liu2020": ["Eq. 16", "Eq. 21", "Thm. 4.1", "Eq. 48", "Lemma F.3", "Lemma F.4", "Eq. 85"],
    "liu2022": ["Eq. 15", "Thm. 4", "Eq. 22", "Eq. 26", "Eq. 27"],
    "oymak2020": ["Cor. 2.4", "Thm. 3.2", "Thm. 6.2", "Eq. (6.18)", "Lemma C.2", "Lemma G.4", "Lemma H.1", "Thm. I.1"],
}


def test_the_errata_the_book_documents_are_on_the_errata_page():
    ri = _results_index()
    papers, problems = ri.load_index(ri.RESULTS_DIR)
    assert not problems, problems
    listed = {(p["paper"], r["ref"]) for p, r in ri.index_errata(papers)}
    missing = [(paper, ref) for paper, refs in DOCUMENTED_ERRATA.items() for ref in refs if (paper, ref) not in listed]
    assert not missing, f"errata without an erratum field (not on the Errata page): {missing}"
    for _, row in ri.index_errata(papers):
        assert len(row["erratum"]) > 40, row["ref"]  # a sentence, not a placeholder


def test_the_books_index_data_is_well_formed():
    ri = _results_index()
    if not ri.RESULTS_DIR.is_dir():
        pytest.skip("no index data in book/_data/results")
    papers, problems = ri.load_index(ri.RESULTS_DIR)
    assert not problems, problems
    assert [p["paper"] for p in papers] == list(ri.PAPER_KEYS)
    for paper in papers:
        for row in paper["results"]:
            for name in row["measured_by"]:
                experiment = ri.EXPERIMENT.match(name)
                if experiment:  # a function defined in the chapter's code cells
                    notebook = json.loads((ROOT / "book" / f"{experiment['chapter']}.ipynb").read_text())
                    assert experiment["function"] in ri.functions_defined(notebook), f"{row['ref']}: {name}"
                else:
                    assert ri.python_object_exists(name), f"{paper['paper']} {row['ref']}: {name}"


def _real_ledger_dirs() -> list[Path]:
    dirs = [Path(os.environ["NTKBOOK_LEDGER_DIR"])] if os.environ.get("NTKBOOK_LEDGER_DIR") else []
    dirs.append(ROOT / "_build" / "ledger")
    return [d for d in dirs if d.is_dir() and any(d.rglob("*.jsonl"))]


def test_a_real_ledger_satisfies_the_strict_index():
    """Against a full execution's ledgers (every chapter): no measured row without evidence, no dead link."""
    ri = _results_index()
    dirs = _real_ledger_dirs()
    if not ri.RESULTS_DIR.is_dir() or not dirs:
        pytest.skip("no index data or no ledger directory with ledgers")
    papers, _ = ri.load_index(ri.RESULTS_DIR)
    for d in dirs:
        ledgers = claims.read_ledgers(d)
        records = [(stem, r) for stem, recs in ledgers.items() for r in recs]
        problems = ri.strict_problems(papers, ledgers, records)
        assert not problems, f"{d}:\n" + "\n".join(problems)


def test_every_claim_ref_in_a_ledger_names_a_row_of_the_index():
    ri = _results_index()
    dirs = _real_ledger_dirs()
    if not ri.RESULTS_DIR.is_dir() or not dirs:
        pytest.skip("no index data or no ledger directory with ledgers")
    papers, _ = ri.load_index(ri.RESULTS_DIR)
    refs = ri.index_refs(papers)
    unknown = []
    for d in dirs:
        for stem, recs in claims.read_ledgers(d).items():
            unknown += [f"{stem}: {r['claim']} → {r['ref']!r}" for r in recs
                        if not claims.is_book_ref(str(r.get("ref")))
                        and r.get("ref") not in refs]
    assert not unknown, "claims whose ref names no index row:\n" + "\n".join(unknown)
