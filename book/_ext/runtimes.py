"""The ``{chapter-runtime}`` directive: how long a chapter takes at each scale, from measurements;
and the benchmark tables of the Performance page.

Nothing is typed by hand.  Two sources:

* ``benchmarks/results/latest.json`` — the ``chapters`` section written by ``make bench``: the wall
  time of executing each notebook at ``ci`` (papermill) and ``book`` scale (papermill, or the record
  of the last ``make book`` with ``--book-times-from-build``), with the machine it ran on;
* the build itself — myst-nb records how long it took to execute the page being built, at the scale
  of this build (``NTKBOOK_SCALE``, ``book`` by default).

The directive leaves a placeholder while the page is parsed; the text is filled in once the page has
been read (``doctree-read``), when myst-nb's execution record for it exists.
"""

from __future__ import annotations

import json
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


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def _measured(stem: str) -> tuple[dict[str, float], str]:
    """Measured seconds per scale for this notebook, and a description of where they were measured."""
    if not RESULTS.exists():
        return {}, ""
    result = json.loads(RESULTS.read_text())
    times = {r["scale"]: r["seconds"] for r in result.get("chapters", []) if r["chapter"] == stem and r["ok"]}
    m = result.get("machine", {})
    date = result.get("section_dates", {}).get("chapters", result.get("date", ""))
    where = f"{m.get('cpu', 'unknown CPU')}, {m.get('cores', '?')} cores, backend {m.get('backend', '?')}, {date}"
    return times, where


def fill_runtimes(app, doctree: nodes.document) -> None:
    env = app.env
    stem = env.docname.split("/")[-1]
    for node in list(doctree.findall(runtime_placeholder)):
        times, where = _measured(stem)
        para = nodes.paragraph()
        para += nodes.strong(text="Run time: ")
        parts = [f"{scale} {_duration(times[scale])}" for scale in ("ci", "book", "paper") if scale in times]
        if parts:
            text = "; ".join(parts) + f" (measured by make bench on {where})"
            if "paper" not in times:
                text += "; paper scale is meant for a GPU and has not been timed yet"
        else:
            text = "not measured yet (run make bench)"
        para += nodes.Text(text + ". ")
        exec_data = getattr(env, "nb_metadata", {}).get(env.docname, {}).get("exec_data")
        if exec_data and exec_data.get("succeeded"):
            scale = os.environ.get("NTKBOOK_SCALE", "book")
            para += nodes.Text(f"This page was executed at {scale} scale in {_duration(exec_data['runtime'])} "
                               "when this book was built.")
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
