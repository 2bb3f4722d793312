"""Sphinx extension: the ``{claims-ledger}`` directive renders every claim of the last build.

Each chapter records its checks through ``ntkbook.claims`` into ``<ledger dir>/<notebook>.jsonl`` while
it executes (the read phase).  The directive leaves a placeholder that is filled when the page is
written (``doctree-resolved``), after every notebook has run, so the table always shows this
build's claims whatever order Sphinx reads the documents in.  Only notebooks that are part of the
book are listed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


class ledger_placeholder(nodes.General, nodes.Element):
    """Replaced by the ledger tables in ``doctree-resolved``."""


class ClaimsLedgerDirective(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        docs = getattr(self.env, "claims_ledger_docs", set())
        docs.add(self.env.docname)
        self.env.claims_ledger_docs = docs
        return [ledger_placeholder()]


def _ledger_dir(app: Sphinx) -> Path:
    if app.config.ntkbook_ledger_dir:
        return Path(app.config.ntkbook_ledger_dir)
    from ntkbook.claims import ledger_dir

    return ledger_dir()


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        if len(value) > 6:
            return "[" + ", ".join(_format_value(v) for v in value[:3]) + f", … ({len(value)} values)]"
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    return str(value)


def _table(header: list[str], rows: list[list[nodes.Node | str]], widths: list[int]) -> nodes.table:
    table = nodes.table(classes=["claims-ledger"])
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
            entry += cell if isinstance(cell, nodes.Node) else nodes.paragraph(text=cell)
            row += entry
        body += row
    return table


def _notebook_docs(app: Sphinx) -> dict[str, str]:
    """Notebook stem → docname, for the documents that are part of the book."""
    return {Path(doc).name: doc for doc in app.env.found_docs}


def _title(app: Sphinx, docname: str, fallback: str) -> str:
    title = app.env.titles.get(docname)
    return title.astext() if title is not None else fallback


def _fill(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    placeholders = list(doctree.findall(ledger_placeholder))
    if not placeholders:
        return
    from ntkbook.claims import read_ledgers

    docs = _notebook_docs(app)
    ledgers = {name: recs for name, recs in read_ledgers(_ledger_dir(app)).items() if name in docs}
    content: list[nodes.Node] = []
    if not ledgers:
        content.append(nodes.paragraph(text="No claims were recorded in this build."))
    summary_rows = []
    total_pass = total_fail = 0
    for name, records in sorted(ledgers.items()):
        passed = sum(r.get("status") == "passed" for r in records)
        failed = len(records) - passed
        total_pass, total_fail = total_pass + passed, total_fail + failed
        link = nodes.paragraph()
        uri = app.builder.get_relative_uri(docname, docs[name])
        link += nodes.reference("", _title(app, docs[name], name), refuri=uri)
        scales = sorted({str(r.get("scale")) for r in records})
        dates = sorted(str(r.get("date", "")) for r in records)
        summary_rows.append([link, ", ".join(scales), str(passed), str(failed), dates[-1] if dates else ""])
    if ledgers:
        content.append(nodes.paragraph(text=f"{total_pass} claims passed and {total_fail} failed in the last build."))
        content.append(_table(["chapter", "scale", "passed", "failed", "last run (UTC)"], summary_rows,
                              [30, 10, 10, 10, 25]))
    for name, records in sorted(ledgers.items()):
        section = nodes.section(ids=[f"ledger-{name}"])
        section += nodes.title(text=_title(app, docs[name], name))
        rows = []
        for r in records:
            measured = r.get("measured", {}) or {}
            text = "; ".join(f"{k} = {_format_value(v)}" for k, v in measured.items())
            status = "✔ passed" if r.get("status") == "passed" else "✘ FAILED"
            rows.append([nodes.paragraph(text=str(r.get("claim"))), status, str(r.get("ref", "")), text])
        section += _table(["claim", "status", "paper", "measured"], rows, [25, 10, 20, 45])
        content.append(section)
    for node in placeholders:
        node.replace_self(content)


def _always_outdated(app: Sphinx, env: Any, added: set, changed: set, removed: set) -> list[str]:
    return sorted(getattr(env, "claims_ledger_docs", set()) - added - changed)


def _merge(app: Sphinx, env: Any, docnames: set, other: Any) -> None:
    env.claims_ledger_docs = getattr(env, "claims_ledger_docs", set()) | getattr(other, "claims_ledger_docs", set())


def _purge(app: Sphinx, env: Any, docname: str) -> None:
    getattr(env, "claims_ledger_docs", set()).discard(docname)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("ntkbook_ledger_dir", None, "env")
    app.add_node(ledger_placeholder)
    app.add_directive("claims-ledger", ClaimsLedgerDirective)
    app.connect("doctree-resolved", _fill)
    app.connect("env-get-outdated", _always_outdated)
    app.connect("env-merge-info", _merge)
    app.connect("env-purge-doc", _purge)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}


