"""The ``{chapter-runtime}`` directive: how long this chapter took to execute in THIS build, at the
scale it ran at; and the benchmark tables of the Performance page.

Nothing is typed by hand and nothing comes from another run:

* a notebook executed by myst-nb during the build: myst-nb's execution record (``exec_data``: run
  time, and whether it came from Jupyter Book's execution cache — then the page says when that
  execution happened: ``make book`` executes stale chapters into the cache just before the build,
  ``book/_ext/execute_stale_chapters.py``, so in a ``make book`` every chapter comes from there);
* a notebook executed before the build (the test suite runs every chapter with papermill and builds
  from those outputs with execution off): papermill's metadata in the notebook (``duration``, and the
  ``scale`` parameter it injected);
* the scale: the one the chapter's claims were recorded at (its ledger), else papermill's parameter,
  else ``$NTKBOOK_SCALE``.

A chapter that was not executed for this build says so.  The directive leaves a placeholder while
the page is parsed; the text is filled in once the page has been read (``doctree-read``), when
myst-nb's execution record for it exists.

``make bench`` results (``benchmarks/results/latest.{json,md}``) are shown on the Performance page
only, never in a chapter's run-time box.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "latest.json"
GENERATED = Path(__file__).resolve().parents[1] / "_generated" / "bench-results.md"


class runtime_placeholder(nodes.General, nodes.Element):
    """Replaced by a paragraph in :func:`fill_runtimes`."""


class ChapterRuntime(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        return [runtime_placeholder()]


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def _ledger_scale(app, stem: str) -> str | None:
    from ntkbook.claims import read_ledgers

    from claims_ledger import ledger_directory

    try:
        recs = read_ledgers(ledger_directory(app)).get(stem, [])
    except ValueError:
        return None
    scales = sorted({str(r.get("scale")) for r in recs if r.get("scale")})
    return ", ".join(scales) if scales else None


def runtime_text(app, docname: str) -> str:
    """The sentence of the run-time box of ``docname``."""
    from claims_ledger import execution_of

    stem = docname.split("/")[-1]
    run = execution_of(app, docname)
    if run is None or run.get("seconds") is None:
        if run is not None:
            return "this page's outputs were computed before the build, and no record says how long that took."
        return "this page was not executed for this build (its code cells have no outputs)."
    scale = _ledger_scale(app, stem) or run.get("scale") or os.environ.get("NTKBOOK_SCALE", "book")
    text = f"executed at {scale} scale in {duration(float(run['seconds']))}"
    if run["by"] == "papermill":
        return text + " (papermill, for this build)."
    if run.get("method") == "cache":
        when = dt.datetime.fromtimestamp(float(run.get("mtime") or 0), dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        return text + (f" on {when}; this page shows that execution's outputs, kept in Jupyter Book's execution"
                       " cache (make book executes a chapter again only when its code, the package or the"
                       " libraries changed).")
    return text + " when this book was built."


def fill_runtimes(app, doctree: nodes.document) -> None:
    placeholders = list(doctree.findall(runtime_placeholder))
    if not placeholders:
        return
    text = runtime_text(app, app.env.docname)
    for node in placeholders:
        para = nodes.paragraph(classes=["ntkbook-runtime"])
        para += nodes.strong(text="Run time: ")
        para += nodes.Text(text)
        node.replace_self(para)


def write_bench_results(app) -> None:
    """``book/_generated/bench-results.md`` (included by the Performance page): the tables of the last
    ``make bench``, or a note saying that none has been committed yet."""
    tables = RESULTS.with_suffix(".md")
    text = tables.read_text() if tables.exists() else (
        "No benchmark results are committed yet: run `make bench` to measure this machine.\n")
    GENERATED.parent.mkdir(exist_ok=True)
    if not GENERATED.exists() or GENERATED.read_text() != text:
        GENERATED.write_text(text)
    for figure in RESULTS.parent.glob("*.png"):  # figures the tables refer to as _generated/NAME.png
        target = GENERATED.parent / figure.name
        if not target.exists() or target.read_bytes() != figure.read_bytes():
            target.write_bytes(figure.read_bytes())


def setup(app):
    app.connect("builder-inited", write_bench_results)
    app.add_directive("chapter-runtime", ChapterRuntime)
    app.add_node(runtime_placeholder)
    app.connect("doctree-read", fill_runtimes)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
