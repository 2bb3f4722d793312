"""Sphinx extension: the Index of results (``{results-index}``) and the Errata (``{errata}``), built from
this build's claims ledger and the index data in ``book/_data/results/*.yaml``.

Index data (one file per paper; format fixed)::

    paper: liu2020                 # liu2020 | liu2022 | oymak2020
    citation: Liu–Zhu–Belkin 2020  # the prefix of claim refs for this paper
    bibkey: liu2020linearity       # key in book/references.bib
    results:
      - ref: "Prop. 2.3"           # the paper's own number; supplement-only: "supp. Lemma F.1"
        kind: proposition          # see RESULT_KINDS
        title: "..."
        statement: "..."           # one or two lines
        where: "Section 2.3"
        chapter: 01-tangent-kernel # chapter file stem, or null
        label: prop-2-3            # the statement block's :label: in that chapter, or null
        measured_by: [01-tangent-kernel:kernel_change, ntkbook.kernels.empirical_ntk]
        coverage: measured         # measured | illustrated | stated | not-covered
        note: ""                   # for stated / not-covered: why, and what is shown instead
        erratum: "..."             # optional: where the paper is wrong, as the book shows in its text
        claims: [prop-2.3/*]       # optional: claims with another ref that measure this row (ids, fnmatch)

A claim belongs to a row when its ``ref`` is ``citation + ", " + ref`` of the row, or when its id matches one of
the row's ``claims`` patterns (an equation checked by the claim of its theorem, say).  Claims whose ref is
the book's own (``"book, ..."``) are listed after the papers; typed claims whose ref names no row are
listed too, and each is a warning (an error under ``-W``).  Other warnings: malformed data, a row
whose label no statement block has or that sits in another chapter than the row says, a
``measured_by`` entry that names nothing.  A ``measured_by`` entry is a chapter's experiment,
``<chapter stem>:<function>`` (a function its code cells define; the index links to that cell, which gets
the anchor ``experiment-<function>``, underscores as hyphens), or an object home of the package
(``ntkbook.<module>.<name>``).  With ``ntkbook_index_strict = True`` (``_config.yml`` sets it) a row
marked ``measured`` whose chapter was executed but has no claim that counts as evidence (identities and
illustrations do not: such a row is ``illustrated``) is a warning too, and so is a ``claims`` pattern of a
row whose chapter was executed that matches no claim of this build.

The Errata page lists every claim of this build that carries an ``erratum`` (the paper's statement from
the index row, the erratum, the measurement and its status), then every index row with an ``erratum``
field: the errata the book documents in its text or in the index without a claim that measures them
(a wrong reference, a typo in a proof, a constant the proof does not deliver), each with where the book
shows it (the statement block, the chapter, or the index row itself).
"""

from __future__ import annotations

import fnmatch
import importlib
import re
from pathlib import Path
from typing import Any

import yaml
from docutils import nodes
from ntkbook.claims import is_book_ref, is_evidence
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode

from claims_ledger import (
    book_ledgers,
    book_notebooks,
    doc_link,
    execution_of,
    label_link,
    make_table,
    note_generated_page,
    plural,
    read_notebook,
    track_generated_pages,
    verdict_node,
)

RESULTS_DIR = Path(__file__).resolve().parents[1] / "_data" / "results"
PAPER_KEYS = ("liu2020", "liu2022", "oymak2020")
RESULT_KINDS = ("definition", "assumption", "proposition", "lemma", "theorem", "corollary", "remark", "equation",
                "figure", "table", "section")
COVERAGE = ("measured", "illustrated", "stated", "not-covered")
ROW_FIELDS = ("ref", "kind", "title", "statement", "where", "chapter", "label", "measured_by", "coverage", "note")
OPTIONAL_ROW_FIELDS = ("erratum", "claims")
logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


def results_dir(app: Sphinx) -> Path:
    return Path(app.config.ntkbook_results_dir or RESULTS_DIR)


def load_index(directory: Path = RESULTS_DIR) -> tuple[list[dict[str, Any]], list[str]]:
    """The papers of the index (in the order liu2020, liu2022, oymak2020) and the problems found."""
    from ntkbook.claims import PAPERS

    problems: list[str] = []
    papers: dict[str, dict[str, Any]] = {}
    files = sorted(directory.glob("*.yaml")) if directory.is_dir() else []
    if not files:
        return [], [f"no index data: {directory}/*.yaml"]
    for path in files:
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as err:
            problems.append(f"{path.name}: not valid YAML ({err})")
            continue
        if not isinstance(data, dict):
            problems.append(f"{path.name}: expected a mapping with paper, citation, bibkey, results")
            continue
        key = data.get("paper")
        if key not in PAPER_KEYS:
            problems.append(f"{path.name}: paper must be one of {PAPER_KEYS}, got {key!r}")
            continue
        if key in papers:
            problems.append(f"{path.name}: paper {key!r} appears in two files")
            continue
        if data.get("citation") not in PAPERS:
            problems.append(f"{path.name}: citation must be one of {PAPERS}, got {data.get('citation')!r}")
        rows = data.get("results")
        if not isinstance(rows, list) or not rows:
            problems.append(f"{path.name}: results must be a non-empty list")
            rows = []
        seen = set()
        good = []
        for i, row in enumerate(rows):
            where = f"{path.name}: results[{i}]"
            if not isinstance(row, dict):
                problems.append(f"{where}: expected a mapping")
                continue
            missing = [f for f in ROW_FIELDS if f not in row]
            extra = sorted(set(row) - set(ROW_FIELDS) - set(OPTIONAL_ROW_FIELDS))
            if missing or extra:
                problems.append(f"{where} ({row.get('ref')!r}): missing fields {missing}, unknown fields {extra}")
                continue
            where = f"{path.name}: {row['ref']!r}"
            if not isinstance(row["ref"], str) or not row["ref"].strip():
                problems.append(f"{where}: ref must be a non-empty string")
                continue
            if row["ref"] in seen:
                problems.append(f"{where}: listed twice")
            seen.add(row["ref"])
            if row["kind"] not in RESULT_KINDS:
                problems.append(f"{where}: kind must be one of {RESULT_KINDS}, got {row['kind']!r}")
            if row["coverage"] not in COVERAGE:
                problems.append(f"{where}: coverage must be one of {COVERAGE}, got {row['coverage']!r}")
            if row["coverage"] in ("stated", "not-covered") and not str(row["note"] or "").strip():
                problems.append(f"{where}: coverage {row['coverage']!r} needs a note saying why and what is shown "
                                "instead")
            if "erratum" in row and (not isinstance(row["erratum"], str) or not row["erratum"].strip()):
                problems.append(f"{where}: erratum must be a non-empty text (leave the field out when there is none)")
            if "claims" in row and (not isinstance(row["claims"], list) or not row["claims"]
                                    or not all(isinstance(c, str) and c.strip() for c in row["claims"])):
                problems.append(f"{where}: claims must be a non-empty list of claim ids or fnmatch patterns")
                row = {k: v for k, v in row.items() if k != "claims"}
            if row["label"] and not row["chapter"]:
                problems.append(f"{where}: a label needs its chapter")
            if not isinstance(row["measured_by"], list):
                problems.append(f"{where}: measured_by must be a list (possibly empty)")
                row = {**row, "measured_by": []}
            good.append(row)
        papers[key] = {**data, "results": good}
    return [papers[k] for k in PAPER_KEYS if k in papers], problems


def full_ref(paper: dict[str, Any], row: dict[str, Any]) -> str:
    return f"{paper['citation']}, {row['ref']}"


def index_errata(papers: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(paper, row) for every index row with an ``erratum`` field, in the order of the index."""
    return [(p, r) for p in papers for r in p["results"] if isinstance(r.get("erratum"), str) and r["erratum"].strip()]


def index_refs(papers: list[dict[str, Any]]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Full claim ref → (paper, row)."""
    return {full_ref(p, r): (p, r) for p in papers for r in p["results"]}


def all_records(app: Sphinx) -> list[tuple[str, dict[str, Any]]]:
    return [(stem, r) for stem, recs in book_ledgers(app).items() for r in recs]


def row_records(paper: dict[str, Any], row: dict[str, Any],
                records: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The claims of a row: those whose ref is the row's, then those whose id matches a ``claims`` pattern."""
    ref = full_ref(paper, row)
    patterns = row.get("claims") or []
    return [(stem, r) for stem, r in records if str(r.get("ref", "")) == ref] + [
        (stem, r) for stem, r in records if str(r.get("ref", "")) != ref
        and any(fnmatch.fnmatchcase(str(r.get("claim", "")), p) for p in patterns)]


EXPERIMENT = re.compile(r"^(?P<chapter>[0-9][0-9A-Za-z_-]*):(?P<function>[A-Za-z_]\w*)$")
"""A ``measured_by`` entry naming a chapter's experiment: ``04-lazy-training:weight_change``."""
DEF = re.compile(r"^def ([A-Za-z_]\w*)\(", re.MULTILINE)


def functions_defined(notebook: dict[str, Any]) -> set[str]:
    """The names of the functions that the code cells of a notebook (its JSON) define at top level."""
    return {name for c in notebook.get("cells", []) if c.get("cell_type") == "code"
            for name in DEF.findall("".join(c.get("source", [])))}


def chapter_functions(app: Sphinx, chapter: str) -> set[str]:
    """The names of the functions that the code cells of ``chapter`` define at top level."""
    docs = book_notebooks(app)
    return functions_defined(read_notebook(app, docs[chapter])) if chapter in docs else set()


def anchor_experiments(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read``: give each code cell that defines a top-level function the id ``experiment-<name>``, the
    target of the index's ``measured_by`` links."""
    for cell in doctree.findall(nodes.container):
        if "cell" not in cell.get("classes", []):
            continue
        for block in cell.findall(nodes.literal_block):
            for name in DEF.findall(block.astext()):
                ident = f"experiment-{name.replace('_', '-')}"
                if ident not in cell["ids"]:
                    cell["ids"].append(ident)
            break


def python_object_exists(dotted: str) -> bool:
    """Whether ``dotted`` (``package.module.attr``) names an importable module or attribute."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def index_problems(app: Sphinx) -> list[str]:
    """Everything the index or the errata cannot show correctly in this build."""
    papers, problems = load_index(results_dir(app))
    proofs = getattr(app.env, "proof_list", {})
    docs = book_notebooks(app)
    for paper in papers:
        for row in paper["results"]:
            where = f"index row {full_ref(paper, row)!r}"
            if row["chapter"] and row["chapter"] not in docs:
                problems.append(f"{where}: chapter {row['chapter']!r} is not a chapter of the book")
            if row["label"]:
                match = proofs.get(row["label"])
                if match is None:
                    problems.append(f"{where}: no statement block has the label {row['label']!r}")
                elif Path(match["docname"]).name != row["chapter"]:
                    problems.append(f"{where}: label {row['label']!r} is in {match['docname']}, "
                                    f"not in chapter {row['chapter']!r}")
            for name in row["measured_by"]:
                experiment = EXPERIMENT.match(str(name))
                if experiment:
                    if experiment["function"] not in chapter_functions(app, experiment["chapter"]):
                        problems.append(f"{where}: measured_by names {name!r}, but chapter "
                                        f"{experiment['chapter']!r} defines no function {experiment['function']!r}")
                elif not python_object_exists(str(name)):
                    problems.append(f"{where}: measured_by names {name!r}, which the package does not have")
    refs = index_refs(papers)
    ledgers = book_ledgers(app)
    if papers:
        for stem, rec in all_records(app):
            ref = str(rec.get("ref", ""))
            if not is_book_ref(ref) and ref not in refs:
                problems.append(f"claim {rec.get('claim')!r} of {stem}: ref {ref!r} names no row of the index")
        if app.config.ntkbook_index_strict:
            executed = {stem: recs for stem, recs in ledgers.items()
                        if stem in docs and execution_of(app, docs[stem]) is not None}
            problems += strict_problems(papers, executed, all_records(app))
    return problems


def strict_problems(papers: list[dict[str, Any]], executed: dict[str, list[dict[str, Any]]],
                    records: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The checks of ``ntkbook_index_strict`` for the rows whose chapter is in ``executed`` (chapter stem →
    its ledger, for the chapters executed for this build): a row marked ``measured`` needs a claim that
    counts as evidence, and every ``claims`` pattern must match a claim of this build (``records``)."""
    problems = []
    for paper in papers:
        for row in paper["results"]:
            if row["chapter"] not in executed:
                continue
            ref = full_ref(paper, row)
            for pattern in row.get("claims") or []:
                if not any(fnmatch.fnmatchcase(str(r.get("claim", "")), pattern) for _, r in records):
                    problems.append(f"index row {ref!r} names claims {pattern!r}, but this build recorded none")
            if row["coverage"] == "measured" and not any(is_evidence(r) for _, r in row_records(paper, row, records)):
                problems.append(f"index row {ref!r} is marked measured, but chapter {row['chapter']!r} recorded no "
                                "claim for it that counts as evidence in this build (link the claim that measures "
                                "it in 'claims', or say what the row is: illustrated, stated)")
    return problems


def _check_consistency(app: Sphinx, env: Any) -> None:
    if not getattr(env, "results_pages_docs", set()):
        return
    for problem in index_problems(app):
        logger.warning(f"index of results: {problem}", type="ntkbook", subtype="index")


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------


def _api_link(app: Sphinx, fromdoc: str, name: str) -> nodes.Node:
    experiment = EXPERIMENT.match(name)
    if experiment:
        literal = nodes.literal(text=f"{experiment['function']} (chapter {experiment['chapter'].split('-')[0]})")
        docs = book_notebooks(app)
        if experiment["chapter"] not in docs:
            return literal
        anchor = f"experiment-{experiment['function'].replace('_', '-')}"
        return make_refnode(app.builder, fromdoc, docs[experiment["chapter"]], anchor, literal)
    literal = nodes.literal(text=name.removeprefix("ntkbook."))
    entry = app.env.get_domain("py").objects.get(name)
    if entry is None:
        return literal
    return make_refnode(app.builder, fromdoc, entry.docname, entry.node_id, literal)


def _where(app: Sphinx, fromdoc: str, row: dict[str, Any]) -> nodes.paragraph:
    para = nodes.paragraph()
    docs = book_notebooks(app)
    link = label_link(app, fromdoc, row.get("label"))
    if link is not None:
        para += link
        para += nodes.Text(" in ")
    if row.get("chapter") in docs:
        para += doc_link(app, fromdoc, docs[row["chapter"]])
    elif link is None:
        para += nodes.Text("—")
    return para


def _claims_cell(records: list[tuple[str, dict[str, Any]]], row: dict[str, Any] | None) -> list[nodes.Node]:
    out: list[nodes.Node] = [verdict_node(r) for _, r in records]
    if row is not None:
        note = str(row.get("note") or "").strip()
        coverage = row["coverage"]
        if not records:
            text = {"measured": "measured — no claim for it in this build",
                    "illustrated": "illustrated — no claim for it in this build",
                    "stated": "stated, not measured", "not-covered": "not covered"}[coverage]
            out.append(nodes.paragraph(text=text + (f": {note}" if note else ""), classes=["ntkbook-coverage"]))
        elif note:
            out.append(nodes.paragraph(text=note, classes=["ntkbook-coverage"]))
    return out


def index_content(app: Sphinx, docname: str) -> list[nodes.Node]:
    papers, _ = load_index(results_dir(app))
    records = all_records(app)
    by_ref: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for stem, rec in records:
        by_ref.setdefault(str(rec.get("ref", "")), []).append((stem, rec))
    refs = index_refs(papers)
    content: list[nodes.Node] = []
    n_rows = sum(len(p["results"]) for p in papers)
    n_claimed = sum(1 for paper in papers for row in paper["results"] if row_records(paper, row, records))
    content.append(nodes.paragraph(text=f"{plural(n_rows, 'numbered result')} of the three papers, "
                                        f"{n_claimed} with claims checked in this build "
                                        f"({plural(len(records), 'claim')} in all)."))
    for paper in papers:
        section = nodes.section(ids=[f"results-{paper['paper']}"])
        section += nodes.title(text=paper["citation"])
        cov = {c: sum(r["coverage"] == c for r in paper["results"]) for c in ("measured", "illustrated", "stated",
                                                                                 "not-covered")}
        section += nodes.paragraph(text=f"{len(paper['results'])} results: {cov['measured']} measured, "
                                        f"{cov['illustrated']} illustrated, {cov['stated']} stated without a "
                                        f"measurement, {cov['not-covered']} not covered.")
        rows = []
        for row in paper["results"]:
            result = nodes.paragraph()
            result += nodes.strong(text=row["ref"])
            result += nodes.Text(f" ({row['kind']}, {row['where']}) — {row['title']}")
            statement = nodes.paragraph(text=str(row["statement"]), classes=["ntkbook-statement"])
            where = [_where(app, docname, row)]
            if row["measured_by"]:
                measured = nodes.paragraph(text="measured by ", classes=["ntkbook-measured-by"])
                for i, name in enumerate(row["measured_by"]):
                    measured += nodes.Text(", " if i else "")
                    measured += _api_link(app, docname, str(name))
                where.append(measured)
            rows.append([[result, statement], where, _claims_cell(row_records(paper, row, records), row)])
        section += make_table(["result", "in the book", "claims in this build"], rows, [36, 24, 40],
                              ["ntkbook-index"])
        content.append(section)
    own = sorted((ref, recs) for ref, recs in by_ref.items() if is_book_ref(ref))
    if own:
        section = nodes.section(ids=["results-book"])
        section += nodes.title(text="The book's own results")
        section += nodes.paragraph(text="Claims about results the book derives itself (not numbered in the papers).")
        rows = []
        for ref, recs in own:
            where = nodes.paragraph()
            labels = sorted({str(r.get("label")) for _, r in recs if r.get("label")})
            for i, label in enumerate(labels):
                where += nodes.Text(", " if i else "")
                link = label_link(app, docname, label)
                where += link if link is not None else nodes.Text(label)
            rows.append([nodes.paragraph(text=ref.removeprefix("book").lstrip(" ,:")), where,
                         _claims_cell(recs, None)])
        section += make_table(["result", "in the book", "claims in this build"], rows, [34, 18, 48],
                              ["ntkbook-index"])
        content.append(section)
    unknown = sorted((ref, recs) for ref, recs in by_ref.items() if ref not in refs and not is_book_ref(ref))
    if unknown:
        section = nodes.section(ids=["results-unindexed"])
        section += nodes.title(text="Claims whose reference is not in the index")
        section += nodes.paragraph(text="Every claim listed here is an error of the claim or of the index data "
                                        "(the build warns about each).")
        rows = [[nodes.paragraph(text=ref), _claims_cell(recs, None)] for ref, recs in unknown]
        section += make_table(["reference as recorded", "claims in this build"], rows, [30, 70], ["ntkbook-index"])
        content.append(section)
    return content


def _paper_cell(ref: str, row: dict[str, Any] | None) -> list[nodes.Node]:
    result = nodes.paragraph()
    result += nodes.strong(text=ref)
    cells: list[nodes.Node] = [result]
    if row is not None:
        result += nodes.Text(f" — {row['title']}")
        cells.append(nodes.paragraph(text=str(row["statement"]), classes=["ntkbook-statement"]))
    return cells


def errata_content(app: Sphinx, docname: str) -> list[nodes.Node]:
    papers, _ = load_index(results_dir(app))
    refs = index_refs(papers)
    errata = [(stem, r) for stem, r in all_records(app) if r.get("erratum")]
    documented = index_errata(papers)
    content: list[nodes.Node] = []
    if not errata and not documented:
        content.append(nodes.paragraph(text="No claim checked in this build and no row of the index documents an "
                                            "erratum."))
        return content
    content.append(nodes.paragraph(text=f"{plural(len(errata) + len(documented), 'erratum', 'errata')}: "
                                        f"{len(errata)} documented by a claim checked in this build, "
                                        f"{len(documented)} shown in the text or the index without a claim."))
    header = ["the paper", "what the book finds", "measurement", "in the book"]
    if errata:
        section = nodes.section(ids=["errata-measured"])
        section += nodes.title(text="Measured in this build")
        rows = []
        for _, rec in errata:
            ref = str(rec.get("ref", ""))
            where = nodes.paragraph()
            link = label_link(app, docname, rec.get("label"))
            where += link if link is not None else nodes.Text(str(rec.get("label") or "—"))
            rows.append([_paper_cell(ref, refs[ref][1] if ref in refs else None),
                         nodes.paragraph(text=str(rec["erratum"])), verdict_node(rec), where])
        section += make_table(header, rows, [25, 35, 28, 12], ["ntkbook-errata"])
        content.append(section)
    if documented:
        section = nodes.section(ids=["errata-documented"])
        section += nodes.title(text="Shown in the text")
        section += nodes.paragraph(text="Errata the book shows by an argument, a counterexample in the text or a "
                                        "reading of the proof, with no claim that measures them.")
        rows = []
        for paper, row in documented:
            where = _where(app, docname, row)
            if not row.get("chapter"):
                where = nodes.paragraph(text=f"the Index of results (row {row['ref']} of {paper['citation']}); "
                                             "not in a chapter")
            rows.append([_paper_cell(full_ref(paper, row), row), nodes.paragraph(text=str(row["erratum"]).strip()),
                         nodes.paragraph(text="not measured", classes=["ntkbook-coverage"]), where])
        section += make_table(header, rows, [25, 35, 16, 24], ["ntkbook-errata"])
        content.append(section)
    return content


class results_placeholder(nodes.General, nodes.Element):
    """Replaced in ``doctree-resolved`` by the index (``page = "index"``) or the errata."""


class _PageDirective(SphinxDirective):
    has_content = False
    page = ""

    def run(self) -> list[nodes.Node]:
        note_generated_page(self.env, "results_pages_docs")
        return [results_placeholder(page=self.page)]


class ResultsIndexDirective(_PageDirective):
    page = "index"


class ErrataDirective(_PageDirective):
    page = "errata"


def _fill(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for node in list(doctree.findall(results_placeholder)):
        make = index_content if node["page"] == "index" else errata_content
        node.replace_self(make(app, docname))


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("claims_ledger")
    app.add_config_value("ntkbook_index_strict", False, "env")
    app.add_config_value("ntkbook_results_dir", None, "env")
    app.add_node(results_placeholder)
    app.add_directive("results-index", ResultsIndexDirective)
    app.add_directive("errata", ErrataDirective)
    app.connect("doctree-resolved", _fill)
    app.connect("doctree-read", anchor_experiments)
    track_generated_pages(app, "results_pages_docs")
    app.connect("env-check-consistency", _check_consistency)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
