"""Every chapter executed once at ci scale through papermill; the book rendered from those outputs,
served locally and read by headless Chromium as a reader would.

The chapters are executed by ``tests/execute_chapters.py`` — by ``make test`` before pytest starts
(``$NTKBOOK_EXECUTED_DIR``), or by the ``executed`` fixture when this file runs on its own.  Each
chapter must run to the end with its own claims ledger: at least one claim, none failed (``inconclusive``
is allowed at ci scale), every one at ci scale; every captioned figure cell shows exactly one figure.
The book is then built from the executed copies (execution off: nothing runs a second time here) with
warnings as errors.  nbval re-executes executed notebooks in the same pytest run (one chapter in
``make test``, all in ``make test-determinism``) and compares their check cells' outputs (see the Makefile).

Every page of ``_toc.yml`` is opened at 1280 px (a laptop with both sidebars) and at 390 px (a phone)
and read by ``tests/reader.py``: nothing runs past the text column except inside a box that scrolls;
no raw dict or repr printed as an output; every image in a captioned figure; all maths typeset by the
MathJax copy shipped with the book; every internal link and anchor resolves; no uncaught JavaScript
error; chapters show a verdict line for every claim they recorded and number their theorem-like blocks
and exercises; the Claims ledger lists every claim of this build and the Index of results links every
chapter with claims.  Screenshots (first screen at both widths; the whole page at phone width
under ``make read-book``) are kept under
``_build/test-artifacts/screenshots/``.  ``tests/test_book_reader.py`` builds a tiny book with
one defect planted per page and shows that each is caught (and the clean page passes).  The student
edition (``hide_solutions``) is checked to contain no solution.

``make read-book`` runs the page reader (``test_page_in_a_real_browser``) on the book that the last
``make book`` built instead (``$NTKBOOK_BUILT_BOOK`` = the checkout: its ``_build/html``, the executed
chapters in ``_build/jupyter_execute`` and the claims ledger of its execution cache), at whatever scale
that build ran.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import nbformat
import pytest
import reader
import yaml
from execute_chapters import chapter_stems, execute_all
from print_pdf import launch_chromium, toc_entries  # book/_ext, on the path through execute_chapters

from ntkbook.claims import read_ledgers

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "_build" / "test-artifacts" / "screenshots"
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"
NOTEBOOK_STEMS = chapter_stems()
LEDGER_PAGE = "book/claims-ledger"
INDEX_PAGE = "book/index-of-results"


def toc_pages(toc_file: Path = ROOT / "_toc.yml") -> list[str]:
    return [page for page, _ in toc_entries(toc_file)]


def build(out: Path, *, student: bool = False, strict: bool = True) -> Path:
    """Build the copy of the book in ``out`` (notebooks already executed there) without executing it."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    if student:
        config["sphinx"]["config"]["hide_solutions"] = True
    config["execute"]["execute_notebooks"] = "off"
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = os.environ | {"NTKBOOK_SCALE": "ci", "NTKBOOK_LEDGER_DIR": str(out / "ledger"), "NTKBOOK_PROGRESS": "0"}
    flags = ["-W", "-n", "--keep-going"] if strict else []
    proc = subprocess.run([str(JUPYTER_BOOK), "build", str(out), "--builder", "html", *flags],
                          capture_output=True, text=True, env=env)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, "book build failed:\n" + "\n".join(
        line for line in log.splitlines() if "WARNING" in line or "ERROR" in line or "Error" in line)[-6000:]
    return out / "_build" / "html"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The book copied to a directory with every chapter executed there once at ci scale, and
    ``{stem: {"seconds", "error"}}``: from ``make test`` ($NTKBOOK_EXECUTED_DIR) or executed now
    (nothing with ``$NTKBOOK_BUILT_BOOK``: the pages of that build are read as they are)."""
    if os.environ.get("NTKBOOK_BUILT_BOOK"):
        return None, {}
    given = os.environ.get("NTKBOOK_EXECUTED_DIR")
    if given:
        out = Path(given)
        return out, json.loads((out / "execution.json").read_text())
    out = tmp_path_factory.mktemp("book")
    return out, execute_all(out, jobs=2)


def ledger_records(out: Path, stem: str) -> list[dict]:
    return read_ledgers(out / "ledger").get(stem, [])


@pytest.mark.notebook
@pytest.mark.parametrize("stem", NOTEBOOK_STEMS)
def test_notebook_runs_at_ci_scale(executed, stem):
    out, results = executed
    if out is None:
        pytest.skip("$NTKBOOK_BUILT_BOOK: reading the pages of a `make book` build, nothing executed here")
    assert results[stem]["error"] is None, f"the notebook failed:\n{results[stem]['error']}"
    records = ledger_records(out, stem)
    assert records, "the notebook recorded no claims"
    failed = [r["claim"] for r in records if r["status"] == "failed"]
    assert not failed, f"failed claims: {failed}"
    assert {r["scale"] for r in records} == {"ci"}, "papermill's scale parameter did not reach the notebook"
    for cell in nbformat.read(out / "book" / f"{stem}.ipynb", as_version=4).cells:
        if cell.cell_type == "code" and cell.metadata.get("mystnb", {}).get("figure"):
            shown = [o for o in cell.outputs if o.output_type in ("display_data", "execute_result")]
            assert len(shown) == 1 and "image/png" in shown[0].data, f"figure cell shows {len(shown)} outputs"


class _Handler(http.server.SimpleHTTPRequestHandler):
    statuses: ClassVar[list[tuple[str, int]]] = []

    def log_request(self, code="-", size="-"):  # record every request, print nothing
        _Handler.statuses.append((self.path, int(code) if str(code).isdigit() else 0))


def serve(html: Path):
    handler = functools.partial(_Handler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def built_book(root: Path, out: Path) -> tuple[Path, Path]:
    """``(html, out)`` for the book ``make book`` built in checkout ``root``: ``out/book`` holds its executed
    chapters and ``out/ledger`` the claims ledger of the execution cache it was built from."""
    html = root / "_build" / "html"
    executed_dir = root / "_build" / "jupyter_execute" / "book"
    ledgers = [p / "ledger" for p in (root / "_build" / ".jupyter_cache").glob("*-*") if (p / "ledger").is_dir()]
    if not (html / "index.html").exists() or not executed_dir.is_dir() or len(ledgers) != 1:
        pytest.fail(f"$NTKBOOK_BUILT_BOOK={root}: no finished `make book` there (need _build/html, "
                    f"_build/jupyter_execute/book and one execution cache with a ledger; found {len(ledgers)})")
    shutil.copytree(executed_dir, out / "book", ignore=shutil.ignore_patterns("*.py", "*.png"))
    shutil.copytree(ledgers[0], out / "ledger")
    return html, out


@pytest.fixture(scope="module")
def site(executed, tmp_path_factory):
    given = os.environ.get("NTKBOOK_BUILT_BOOK")
    if given:
        html, out = built_book(Path(given).resolve(), tmp_path_factory.mktemp("built"))
        server, base = serve(html)
        yield html, base, out
        server.shutdown()
        return
    out, results = executed
    failed = sorted(stem for stem, r in results.items() if r["error"])
    assert not failed, f"notebooks that failed (see their own tests): {failed}"
    html = build(out)
    server, base = serve(html)
    yield html, base, out
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    """Headless Debian chromium, launched as make pdf and make slides launch it."""
    with launch_chromium() as b:
        yield b


def read_page(browser, base: str, html: Path, page_name: str, *, screenshots: Path | None = None,
              full_page: bool = False, claims: dict[str, list[str]] | None = None):
    """Open ``page_name``, read it at each width of :data:`reader.WIDTHS` and return ``(problems, page)``
    (the page left open, at the last width, for page-specific checks by the caller, who closes it; those
    checks read the page's text, not its layout, so the page is not laid out once more at the first width:
    at chapter size each width change costs about a second of the browser's CPU time).

    ``claims``: claim ids recorded per chapter stem in this build (for verdicts, ledger, index).
    """
    claims = claims or {}
    page = browser.new_page(viewport={"width": reader.WIDTHS[0], "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    _Handler.statuses.clear()
    url = f"{base}/{page_name}.html"
    response = page.goto(url, wait_until="load")
    assert response is not None and response.status == 200, f"{url}: status {response and response.status}"
    problems = reader.wait_for_maths(page)
    page.wait_for_load_state("networkidle")
    problems += reader.resources(page, html, base, list(_Handler.statuses))
    problems += reader.captions(page)
    problems += reader.raw_reprs(page)
    problems += reader.placeholders(page)
    stem = page_name.split("/")[-1]
    if stem in claims:
        problems += reader.verdicts(page, claims[stem])
    if page_name.endswith("claims-ledger"):
        problems += reader.ledger_page(page, claims)
    if page_name.endswith("index-of-results"):
        problems += reader.index_page(page, [s for s, ids in claims.items() if ids])
    for width in reader.WIDTHS:
        page.set_viewport_size({"width": width, "height": 900 if width > 800 else 844})
        page.wait_for_timeout(200)  # the theme's resize handlers
        problems += reader.overflow(page, width)
        if width == reader.WIDTHS[0]:
            problems += reader.scrolls_at_laptop_width(page)
            problems += reader.tables_at_laptop_width(page)
        if screenshots is not None:
            screenshots.mkdir(parents=True, exist_ok=True)
            # JPEG: full-page PNGs of the long pages took 2–6 s each to encode, JPEG about half of that.
            # The first screen at each width; with ``full_page`` (make read-book) the whole page at phone
            # width (every figure and table in reading order).  Full-page captures of all 21 pages took
            # 48 s at 1280 px and 20–38 s at 390 px against 1.4 s for first screens (quiet 2-core
            # machine), so make test takes first screens only: what the reader checks (overflow, maths,
            # captions, verdicts) is found in the page itself above, not by looking at the pictures.
            page.screenshot(path=str(screenshots / f"{page_name.replace('/', '_')}-{width}.jpg"),
                            full_page=full_page and width < 800, type="jpeg", quality=70)
    problems += reader.js_errors(errors)
    return problems, page


@pytest.fixture(scope="module")
def claims(site):
    """Claim ids per chapter in this build, and whether any check cell printed a verdict line (an output
    naming its claim); until the claims print verdicts, chapter pages are not checked for them."""
    out = site[2]
    by_chapter = {stem: [r["claim"] for r in ledger_records(out, stem)] for stem in NOTEBOOK_STEMS}
    printed = False
    for stem in NOTEBOOK_STEMS:
        text = json.dumps([c.outputs for c in nbformat.read(out / "book" / f"{stem}.ipynb", as_version=4).cells
                           if c.cell_type == "code" and "nbval-check-output" in c.metadata.get("tags", [])])
        printed |= any(claim in text for claim in by_chapter[stem])
    return by_chapter, printed




@pytest.mark.parametrize("page_name", toc_pages())
def test_page_in_a_real_browser(site, browser, claims, page_name):
    html, base, _ = site
    by_chapter, verdicts_printed = claims
    problems, page = read_page(browser, base, html, page_name, screenshots=ARTIFACTS,
                               full_page=bool(os.environ.get("NTKBOOK_BUILT_BOOK")), claims=by_chapter)
    try:
        # numbered theorem-like blocks and exercises (chapters)
        titles = page.eval_on_selector_all(
            "div.proof.admonition > p.admonition-title, div.exercise.admonition > p.admonition-title",
            "els => els.map(e => [e.parentElement.className, e.textContent.trim()])")
        for cls, title in titles:
            if cls.strip() == "proof admonition":  # {prf:proof} blocks are not numbered
                continue
            if not re.search(r"\b\d+\b", title):
                problems.append(reader.Problem("blocks", f"unnumbered block {cls!r}: {title!r}"))
        if re.match(r"book/\d", page_name):
            if not any("exercise" in c for c, _ in titles):
                problems.append(reader.Problem("blocks", "a chapter without exercises"))
            if not any("proof" in c and c.strip() != "proof admonition" for c, _ in titles):
                problems.append(reader.Problem("blocks", "a chapter without results"))
    finally:
        page.close()
    if re.match(r"book/\d", page_name) and not verdicts_printed:
        problems.append(reader.Problem("verdict", "no check cell of any chapter printed a line naming its claim"))
    assert not problems, f"{page_name}: {len(problems)} problems\n" + "\n".join(map(str, problems))


@pytest.mark.parametrize("page_name", [LEDGER_PAGE, INDEX_PAGE])
def test_generated_pages_exist(page_name):
    if page_name not in toc_pages():
        pytest.skip(f"{page_name} is not in _toc.yml yet (it comes with the typed claims); "
                    "its contents are checked by test_page_in_a_real_browser once it is")


def test_student_edition_hides_solutions(site, tmp_path):
    """The book has solutions; the student edition (as ``make book-student``: the sources copied without
    their ``{solution}`` blocks by book/_ext/editions.py, then built with ``hide_solutions``) of a small book
    made of one executed chapter and a page with an exercise has none — not in its pages, nor in any other
    file (``_sources/`` notebooks, search index, downloads) — and keeps the exercises.  (A small book: a
    second build of every page would double the time of this file.)"""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from editions import student_copy

    html, _, out = site
    full = sum(p.read_text().count('class="solution') for p in html.glob("book/*.html"))
    assert full > 0, "the book has no solutions to hide"
    source = tmp_path / "source"
    (source / "book").mkdir(parents=True)
    for name in ("_ext", "_static", "_data"):
        if (out / "book" / name).exists():
            shutil.copytree(out / "book" / name, source / "book" / name)
    shutil.copy(out / "book" / "references.bib", source / "book" / "references.bib")
    chapter = min((p for p in (out / "book").glob("*.ipynb")), key=lambda p: p.stat().st_size)
    shutil.copy(chapter, source / "book" / chapter.name)
    marker = "qzv8c1solutiontext"
    (source / "book" / "intro.md").write_text(
        "# Exercises\n\n```{exercise}\n:label: ex-student\n\nShow that $1 + 1 = 2$.\n```\n\n"
        f"```{{solution}} ex-student\n:class: dropdown\n\nCount: {marker}.\n```\n")
    toc = {"format": "jb-book", "root": "book/intro",
           "parts": [{"caption": "Student", "chapters": [{"file": f"book/{chapter.stem}"}]}]}
    (source / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    shutil.copy(ROOT / "_config.yml", source / "_config.yml")
    assert "{solution}" in chapter.read_text(), f"{chapter.name} has no solution to leave out"
    small = tmp_path / "student"
    student_copy(source, small)
    (small / "ledger").mkdir()
    student = build(small, student=True, strict=False)
    pages = list(student.glob("book/*.html"))
    assert sum(p.read_text().count('class="exercise') for p in pages) >= 2
    assert sum(p.read_text().count('class="solution') for p in pages) == 0
    leaks = [str(p.relative_to(student)) for p in student.rglob("*")
             if p.is_file() and any(s in p.read_bytes() for s in (b"{solution", marker.encode()))]
    assert not leaks, f"solution text in files of the student edition: {leaks}"
    assert (student / "_sources" / "book" / chapter.name).exists()
