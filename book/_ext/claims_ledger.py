"""Sphinx extension: the ``{claims-ledger}`` directive lists every claim of THIS build, and the build
fails when a chapter's claims are missing.

Each chapter records its claims through ``ntkbook.claims`` into ``<ledger dir>/<notebook>.jsonl``
while it executes (the read phase; ``$NTKBOOK_LEDGER_DIR`` or the ``ntkbook_ledger_dir`` setting).
The directive leaves a placeholder that is filled when the page is written (``doctree-resolved``),
after every notebook has run, whatever order Sphinx reads the documents in.

Completeness (checked once every document has been read, ``env-check-consistency``; a warning, so
an error under ``-W``): every chapter of the book that has check cells (code calling
``claims.<kind>(``, :func:`ntkbook.claims.calls_claims`) and was executed for this build — by myst-nb,
or before the build (papermill; the notebook has outputs) — must have a non-empty ledger.

Also here, shared with ``results_index`` (Index of results, Errata): reading the book's ledgers,
links to statement blocks by their ``:label:``, status badges, tables; and the book's stylesheet
(``book/_static/ntkbook.css``: verdicts, tables, these pages).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import make_refnode

STATIC = Path(__file__).resolve().parents[1] / "_static"
logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------


def ledger_directory(app: Sphinx) -> Path:
    if app.config.ntkbook_ledger_dir:
        return Path(app.config.ntkbook_ledger_dir)
    from ntkbook.claims import ledger_dir

    return ledger_dir()


def book_notebooks(app: Sphinx) -> dict[str, str]:
    """Notebook stem → docname, for the notebooks that are part of the book."""
    out = {}
    for doc in sorted(app.env.found_docs):
        if Path(app.env.doc2path(doc)).suffix == ".ipynb":
            out[Path(doc).name] = doc
    return out


def read_notebook(app: Sphinx, docname: str) -> dict[str, Any]:
    return json.loads(Path(app.env.doc2path(docname)).read_text())


def has_check_cells(notebook: dict[str, Any]) -> bool:
    from ntkbook.claims import calls_claims

    return any(cell.get("cell_type") == "code" and calls_claims("".join(cell.get("source", "")))
               for cell in notebook.get("cells", []))


def execution_of(app: Sphinx, docname: str, notebook: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """How the notebook was executed for this build: ``{"by": "myst-nb", "seconds", "method", "mtime"}``
    from myst-nb's record, ``{"by": "papermill", "seconds", "scale"}`` from the notebook's papermill
    metadata (executed before the build), ``{"by": "unknown"}`` for a notebook that has outputs but no
    record, or None when it was not executed."""
    exec_data = getattr(app.env, "nb_metadata", {}).get(docname, {}).get("exec_data")
    if exec_data:
        return {"by": "myst-nb", "seconds": exec_data.get("runtime"), "method": exec_data.get("method"),
                "mtime": exec_data.get("mtime"), "succeeded": exec_data.get("succeeded")}
    notebook = notebook if notebook is not None else read_notebook(app, docname)
    paper = notebook.get("metadata", {}).get("papermill")
    if paper and paper.get("duration") is not None:
        return {"by": "papermill", "seconds": float(paper["duration"]),
                "scale": (paper.get("parameters") or {}).get("scale")}
    if any(cell.get("outputs") for cell in notebook.get("cells", []) if cell.get("cell_type") == "code"):
        return {"by": "unknown"}
    return None


def book_ledgers(app: Sphinx) -> dict[str, list[dict[str, Any]]]:
    """The ledgers of this build's ledger directory that belong to notebooks of the book."""
    from ntkbook.claims import read_ledgers

    docs = book_notebooks(app)
    return {name: recs for name, recs in read_ledgers(ledger_directory(app)).items() if name in docs}


def proof_title(app: Sphinx, label: str) -> str | None:
    """"Theorem 3.1"-style title of the statement block with ``label`` (numbered as the book numbers it)."""
    match = getattr(app.env, "proof_list", {}).get(label)
    if match is None:
        return None
    kind = str(match.get("realtype", "")).title()
    try:
        number = ".".join(map(str, app.env.toc_fignumbers[match["docname"]][match["countertype"]][label]))
    except (KeyError, TypeError, AttributeError):
        number = ""
    return f"{kind} {number}".strip()


def label_link(app: Sphinx, fromdoc: str, label: str | None, text: str | None = None) -> nodes.Node | None:
    """A link to the statement block with ``:label: label``, or None when no block has it."""
    if not label:
        return None
    match = getattr(app.env, "proof_list", {}).get(label)
    if match is None:
        return None
    title = text or proof_title(app, label) or label
    return make_refnode(app.builder, fromdoc, match["docname"], label, nodes.Text(title))


def doc_link(app: Sphinx, fromdoc: str, todoc: str, text: str | None = None) -> nodes.Node:
    uri = app.builder.get_relative_uri(fromdoc, todoc)
    return nodes.reference("", text or doc_title(app, todoc), refuri=uri, internal=True)


def doc_title(app: Sphinx, docname: str) -> str:
    title = app.env.titles.get(docname)
    return title.astext() if title is not None else docname


def badge(status: str, kind: str | None = None) -> nodes.inline:
    """The status badge of a verdict (CSS classes as :func:`ntkbook.claims.verdict_html`)."""
    from ntkbook.claims import ILLUSTRATION_KINDS, STATUS_MARKS

    text = STATUS_MARKS.get(status, status.upper())
    classes = ["ntkbook-badge", f"ntkbook-{status}"]
    if kind in ILLUSTRATION_KINDS:
        classes.append("ntkbook-illustration")
    return nodes.inline(text=text, classes=classes)


def verdict_node(record: dict[str, Any]) -> nodes.paragraph:
    """A record as its verdict line: badge, claim id, kind, criterion."""
    from ntkbook.claims import kind_label

    para = nodes.paragraph(classes=["ntkbook-verdict", f"ntkbook-kind-{record.get('kind')}"])
    para += badge(str(record.get("status")), str(record.get("kind")))
    para += nodes.Text(" ")
    para += nodes.literal(text=str(record.get("claim")), classes=["ntkbook-claim"])
    para += nodes.Text(" ")
    para += nodes.inline(text=f"[{kind_label(str(record.get('kind')))}]", classes=["ntkbook-kind"])
    para += nodes.Text(" " + str(record.get("criterion", "")))
    return para


def make_table(header: list[str], rows: list[list[nodes.Node | str]], widths: list[int],
               classes: list[str]) -> nodes.table:
    table = nodes.table(classes=classes)
    group = nodes.tgroup(cols=len(header))
    table += group
    for w in widths:
        group += nodes.colspec(colwidth=w)
    head = nodes.thead()
    group += head
    row = nodes.row()
    for h in header:
        row += nodes.entry("", nodes.paragraph(text=h))
    head += row
    body = nodes.tbody()
    group += body
    for cells in rows:
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            if isinstance(cell, list):
                for c in cell:
                    entry += c
            else:
                entry += cell if isinstance(cell, nodes.Node) else nodes.paragraph(text=cell)
            row += entry
        body += row
    return table


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"


def counts(records: list[dict[str, Any]]) -> dict[str, int]:
    """passed / failed / inconclusive among evidence; identities and other illustrations counted apart."""
    from ntkbook.claims import is_evidence

    c = Counter(r.get("status") for r in records if is_evidence(r))
    return {"passed": c["passed"], "failed": c["failed"], "inconclusive": c["inconclusive"],
            "identities": sum(r.get("kind") == "identity" for r in records),
            "illustrations": sum(not is_evidence(r) for r in records)}


def note_generated_page(env: Any, attr: str) -> None:
    """Remember that the document being read is a page generated from this build's ledger."""
    docs = getattr(env, attr, set())
    docs.add(env.docname)
    setattr(env, attr, docs)


def track_generated_pages(app: Sphinx, attr: str) -> None:
    """Keep the pages noted under ``env.<attr>`` outdated in every build (their content comes from the
    ledger, not from their source), across parallel reads and when a page is removed."""

    def outdated(app: Sphinx, env: Any, added: set, changed: set, removed: set) -> list[str]:
        return sorted(getattr(env, attr, set()) - added - changed)

    def merge(app: Sphinx, env: Any, docnames: set, other: Any) -> None:
        setattr(env, attr, getattr(env, attr, set()) | getattr(other, attr, set()))

    def purge(app: Sphinx, env: Any, docname: str) -> None:
        getattr(env, attr, set()).discard(docname)

    app.connect("env-get-outdated", outdated)
    app.connect("env-merge-info", merge)
    app.connect("env-purge-doc", purge)


# ---------------------------------------------------------------------------------------------
# Completeness
# ---------------------------------------------------------------------------------------------


def completeness_problems(app: Sphinx) -> list[str]:
    """Why this build's ledger is incomplete (empty list when it is complete)."""
    from ntkbook.claims import archive_witnesses, read_ledgers, witness_mismatch

    directory = ledger_directory(app)
    problems = []
    try:
        ledgers = read_ledgers(directory)
    except ValueError as err:
        return [str(err)]
    for stem, docname in book_notebooks(app).items():
        notebook = read_notebook(app, docname)
        if not has_check_cells(notebook):
            continue
        if execution_of(app, docname, notebook) is None:
            continue  # not executed for this build (e.g. a preview of another chapter)
        if stem not in ledgers:
            problems.append(f"chapter {stem!r} has check cells and was executed, but its ledger "
                            f"{directory / (stem + '.jsonl')} does not exist")
        elif not ledgers[stem]:
            problems.append(f"chapter {stem!r} has check cells and was executed, but its ledger is empty")
    for stem, recs in ledgers.items():
        if stem not in book_notebooks(app):
            continue
        failed = [r.get("claim") for r in recs if r.get("status") == "failed"]
        if failed:
            problems.append(f"chapter {stem!r}: failed claims {failed}")
        by_id = {r.get("claim"): r for r in recs}
        for claim, witness in archive_witnesses(recs).items():
            differ = witness_mismatch(by_id[claim], witness)
            if differ:
                problems.append(f"chapter {stem!r}: the archive witness {witness.get('claim')!r} differs from the "
                                f"claim it witnesses, {claim!r}, in {', '.join(differ)}: judge the archive with "
                                "the same claim function and criterion")
        strict = [r.get("claim") for r in recs if r.get("status") == "inconclusive" and r.get("scale") != "ci"]
        if strict:
            problems.append(f"chapter {stem!r}: inconclusive claims at book/paper scale {strict}")
    return problems


def _check_consistency(app: Sphinx, env: Any) -> None:
    for problem in completeness_problems(app):
        logger.warning(f"claims ledger incomplete: {problem}", type="ntkbook", subtype="ledger")


# ---------------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------------


class ledger_placeholder(nodes.General, nodes.Element):
    """Replaced by the ledger tables in ``doctree-resolved``."""


class ClaimsLedgerDirective(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        note_generated_page(self.env, "claims_ledger_docs")
        return [ledger_placeholder()]


def _measured_text(measured: dict[str, Any]) -> str:
    from ntkbook.claims import fmt

    return "; ".join(f"{k} = {fmt(v, 6)}" for k, v in (measured or {}).items())


def archive_node(witness: dict[str, Any]) -> nodes.paragraph:
    """The archive's verdict on a claim: its badge, its id and what it measured on the paper-scale runs."""
    para = nodes.paragraph(classes=["ntkbook-archive"])
    para += nodes.strong(text="archive (paper scale): ")
    para += badge(str(witness.get("status")), str(witness.get("kind")))
    para += nodes.Text(" ")
    para += nodes.literal(text=str(witness.get("claim")), classes=["ntkbook-claim"])
    para += nodes.Text(" " + _measured_text(witness.get("measured", {})))
    return para


def ledger_content(app: Sphinx, docname: str) -> list[nodes.Node]:
    from ntkbook.claims import archive_witnesses, witnessed_claim

    docs = book_notebooks(app)
    ledgers = book_ledgers(app)
    content: list[nodes.Node] = []
    if app.builder.format == "html":  # the JSON is written next to the HTML (_write_ledger_json)
        para = nodes.paragraph(text="This ledger as data, for this edition: ")
        uri = "../" * docname.count("/") + LEDGER_JSON
        para += nodes.reference("", LEDGER_JSON, refuri=uri, classes=["ntkbook-ledger-json"])
        para += nodes.Text(" (edition, version, scale, commit and every claim's record).")
        content.append(para)
    executed_unrecorded = []
    not_executed = []
    for stem, doc in docs.items():
        nb = read_notebook(app, doc)
        if stem not in ledgers and has_check_cells(nb):
            (not_executed if execution_of(app, doc, nb) is None else executed_unrecorded).append(doc)
    every = [r for recs in ledgers.values() for r in recs]
    total = counts(every)
    scales = sorted({str(r.get("scale")) for r in every})
    if every:
        text = (f"{plural(len(every), 'claim')} {'was' if len(every) == 1 else 'were'} checked in this build "
                f"(scale {', '.join(scales)}): {total['passed']} passed, {total['failed']} failed, "
                f"{total['inconclusive']} inconclusive")
        if total["illustrations"]:
            others = total["illustrations"] - total["identities"]
            shown = [plural(n, w, ws) for n, w, ws in ((total["identities"], "identity", "identities"),
                                                        (others, "other check", None)) if n]
            text += f"; {' and '.join(shown)} shown as illustrations, not counted as evidence"
        content.append(nodes.paragraph(text=text + "."))
    else:
        content.append(nodes.paragraph(text="No chapter with check cells was executed for this build, so this "
                                            "build checked no claim."))
    for doc in executed_unrecorded:  # the build also fails through _check_consistency
        content.append(nodes.paragraph(text=f"ERROR: {doc_title(app, doc)} was executed but recorded no claims."))
    if not_executed:
        para = nodes.paragraph(text="Chapters with check cells that were not executed for this build: ")
        for i, doc in enumerate(not_executed):
            para += nodes.Text(", " if i else "")
            para += doc_link(app, docname, doc)
        content.append(para)
    if ledgers:
        rows = []
        for stem, recs in ledgers.items():
            c = counts(recs)
            link = nodes.paragraph()
            link += doc_link(app, docname, docs[stem])
            rows.append([link, ", ".join(sorted({str(r.get("scale")) for r in recs})), str(len(recs)),
                         str(c["passed"]), str(c["failed"]), str(c["inconclusive"]), str(c["illustrations"])])
        content.append(make_table(["chapter", "scale", "claims", "passed", "failed", "inconclusive", "illustrations"],
                                  rows, [34, 8, 8, 8, 8, 12, 12], ["ntkbook-ledger"]))
    witnessed = {stem: archive_witnesses(recs) for stem, recs in ledgers.items()}
    n_witnessed = sum(len(w) for w in witnessed.values())
    if n_witnessed:
        status = {(stem, r.get("claim")): r.get("status") for stem, recs in ledgers.items() for r in recs}
        agree = sum(w.get("status") == status[stem, claim] for stem, ws in witnessed.items() for claim, w in ws.items())
        content.append(nodes.paragraph(text=(
            f"The archive as a witness: {plural(n_witnessed, 'claim')} of this build "
            f"{'is' if n_witnessed == 1 else 'are'} also judged, by the same claim function, on the paper-scale "
            f"runs archived in results/paper/ of the repository; the archive's verdict agrees with the build's "
            f"for {agree} of them. Its verdict and numbers are shown under the build's in the column 'measured' "
            "(claim ids with 'archive/' after their first segment).")))
    for stem, recs in ledgers.items():
        witnesses = witnessed[stem]
        section = nodes.section(ids=[f"ledger-{stem}"])
        section += nodes.title(text=doc_title(app, docs[stem]))
        rows = []
        for r in recs:
            where = nodes.paragraph()
            link = label_link(app, docname, r.get("label"))
            where += link if link is not None else nodes.Text(str(r.get("label") or "—"))
            where += nodes.Text(f" · {r.get('ref', '')}")
            numbers = [nodes.paragraph(text=_measured_text(r.get("measured", {})))]
            witness, twin = witnesses.get(r.get("claim")), witnessed_claim(str(r.get("claim")))
            if witness is not None:
                numbers.append(archive_node(witness))
            elif twin is not None:
                text = ("(the archive's verdict, shown beside the claim it witnesses)" if twin in witnesses else
                        f"(judged on the archive alone: this build has no claim {twin} — the archive decides what "
                        "the build's sizes cannot, or the statement was restricted after the archive contradicted it)")
                numbers.append(nodes.paragraph(text=text, classes=["ntkbook-archive"]))
            rows.append([verdict_node(r), where, numbers])
        section += make_table(["verdict (status, claim, kind, criterion)", "statement · paper", "measured"],
                              rows, [55, 20, 25], ["ntkbook-ledger"])
        content.append(section)
    return content


def _fill(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    placeholders = list(doctree.findall(ledger_placeholder))
    if not placeholders:
        return
    content = ledger_content(app, docname)
    for node in placeholders:
        node.replace_self([n.deepcopy() for n in content])


# ---------------------------------------------------------------------------------------------
# The ledger as data: <outdir>/claims-ledger.json
# ---------------------------------------------------------------------------------------------

LEDGER_JSON = "claims-ledger.json"


def build_commit(srcdir: str | Path) -> str | None:
    """The commit the book was built from: ``$NTKBOOK_COMMIT`` (the Makefile sets it: ``git describe --always
    --dirty``, since the student edition is built in a copy outside the repository), else ``git describe`` in
    ``srcdir``, else None."""
    if os.environ.get("NTKBOOK_COMMIT"):
        return os.environ["NTKBOOK_COMMIT"]
    try:
        proc = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=srcdir,
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def ledger_data(app: Sphinx) -> dict[str, Any]:
    """This build's claims ledger as a JSON-ready dict: edition (``student`` when solutions are hidden, else
    ``book``), package version, scales, commit, counts, and per chapter its title, counts and records."""
    import ntkbook

    docs = book_notebooks(app)
    ledgers = book_ledgers(app)
    every = [r for recs in ledgers.values() for r in recs]
    return {
        "edition": "student" if getattr(app.config, "hide_solutions", False) else "book",
        "title": getattr(app.config, "html_title", None) or app.config.project,
        "version": ntkbook.__version__,
        "scale": sorted({str(r.get("scale")) for r in every}) or [os.environ.get("NTKBOOK_SCALE", "book")],
        "commit": build_commit(app.srcdir),
        "counts": counts(every),
        "chapters": {stem: {"title": doc_title(app, docs[stem]), "page": docs[stem], "counts": counts(recs),
                            "claims": recs} for stem, recs in ledgers.items()},
    }


def _write_ledger_json(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    path = Path(app.outdir) / LEDGER_JSON
    path.write_text(json.dumps(ledger_data(app), indent=1, ensure_ascii=False, default=str) + "\n")


def _add_static(app: Sphinx, config: Any) -> None:
    path = str(STATIC)
    if path not in [str(p) for p in config.html_static_path]:
        config.html_static_path.append(path)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("ntkbook_ledger_dir", None, "env")
    app.connect("config-inited", _add_static)
    app.add_css_file("ntkbook.css")
    app.add_node(ledger_placeholder)
    app.add_directive("claims-ledger", ClaimsLedgerDirective)
    app.connect("doctree-resolved", _fill)
    track_generated_pages(app, "claims_ledger_docs")
    app.connect("env-check-consistency", _check_consistency)
    app.connect("build-finished", _write_ledger_json)
    return {"version": "0.2", "parallel_read_safe": True, "parallel_write_safe": True}
