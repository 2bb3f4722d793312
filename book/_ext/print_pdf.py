"""``make pdf``: the book that ``make book`` built, printed to PDF by headless Chromium.

Every page of ``_toc.yml`` is opened from ``_build/html`` (served on a local port), MathJax is awaited
(``MathJax.startup.promise``: the book ships MathJax 3), the solutions' dropdowns are opened (the PDF is
the teacher's book), a print stylesheet hides the navigation and keeps figures, tables, statements and
outputs unsplit, and the page is printed (DevTools ``Page.printToPDF`` through Playwright's
``page.pdf``) to ``_build/pdf/<page>.pdf`` — the per-chapter handouts.  The pages are then merged in
table-of-contents order into ``_build/pdf/book.pdf`` with one bookmark per part and per page.

Nothing is executed: the pages are the HTML that ``make book`` rendered from its executed chapters.
Why Chromium rather than Jupyter Book's LaTeX builder: see the README ("PDF and slides").

    python book/_ext/print_pdf.py [--html _build/html] [--toc _toc.yml] [--out _build/pdf]
"""

from __future__ import annotations

import argparse
import functools
import html as html_lib
import http.server
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

# The print stylesheet: the article alone, full width; nothing interactive; no block split across pages.
PRINT_CSS = """
@page { size: A4; margin: 16mm 14mm 16mm 14mm; }
html, body { background: #fff !important; }
.bd-header, .bd-header-announcement, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-footer,
.bd-footer-article, .bd-footer-content, .header-article, .prev-next-area, .prev-next-footer, .footer-items,
.headerlink, .copybtn, button.toggle-button, .toggle-button, .dropdown-toggle, .search-button-field,
#pst-back-to-top, .skip-link, .bd-search, .pst-scrollable-table-container::-webkit-scrollbar,
.sidebar-toggle, .theme-switch-button, .tag_hide-input > .cell_input, details.hide.above-input {
  display: none !important; }
.toggle-hidden { display: block !important; visibility: visible !important; }
figure, img, tr, .math, mjx-container, div.admonition, .cell_output > div, .ntkbook-verdict,
div.highlight, pre { break-inside: avoid; page-break-inside: avoid; }
h1, h2, h3, h4, .admonition-title, figcaption { break-after: avoid; page-break-after: avoid; }
img { max-width: 100% !important; height: auto !important; }
.table-wrapper, .pst-scrollable-table-container, .output, .cell_output, div.highlight, pre {
  overflow: visible !important; }
pre { white-space: pre-wrap !important; word-break: break-word; }
table { font-size: 0.78em !important; width: 100% !important; }
table.ntkbook-index td:nth-child(1), table.ntkbook-ledger td:nth-child(1) { width: 36%; }
table.ntkbook-index td:nth-child(2) { width: 16%; }
"""

# The pages' 16 px body text at 0.8: about 9.5 pt on A4, as a printed textbook (chapter 3: 51 pages at 1, 37 at 0.8).
PRINT_SCALE = 0.8

# The footer names the page; page numbers are stamped afterwards (stamp_page_numbers): within the handout
# in <page>.pdf, through the whole book in book.pdf, where Chromium's own numbers would restart on each page.
FOOTER = ('<div style="font-size:8px; width:100%; margin:0 14mm; color:#555"><span>{title}</span></div>')
CONTENTS_HTML = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body {{ font-family: sans-serif; font-size: 11pt; margin: 0; }} h1 {{ font-size: 22pt; margin: 0 0 0.2em; }}
.sub {{ color: #555; margin-bottom: 2em; }} h2 {{ font-size: 12pt; margin: 1.2em 0 0.3em; }}
.row {{ display: flex; margin: 0.15em 0; }}
.row .dots {{ flex: 1; border-bottom: 1px dotted #999;
margin: 0 0.4em 0.3em; }}</style></head><body><h1>{title}</h1><div class="sub">{sub}</div>{rows}</body></html>"""

# Open the solutions (sphinx-togglebutton hides dropdown admonitions with .toggle-hidden) and unlink what
# points to another page of the local server (a printed link to 127.0.0.1 leads nowhere); same-page anchors
# and links to other sites stay.
PREPARE_JS = """() => {
  document.documentElement.dataset.theme = 'light';
  document.documentElement.dataset.mode = 'light';
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  document.querySelectorAll('details.solution, details.dropdown').forEach(d => d.open = true);
  for (const a of document.querySelectorAll('a[href]')) {
    const url = new URL(a.href, location.href);
    if (url.origin === location.origin && url.pathname !== location.pathname) a.removeAttribute('href');
  }
}"""


def toc_entries(toc_file: Path) -> list[tuple[str, str | None]]:
    """``[(page, part caption or None)]`` of a Jupyter Book ``_toc.yml`` (``jb-book`` format), in order.

    Raises:
        ValueError: the file is not a ``jb-book`` table of contents with a root page.
    """
    toc = yaml.safe_load(toc_file.read_text())
    if not isinstance(toc, dict) or "root" not in toc:
        raise ValueError(f"{toc_file}: not a Jupyter Book table of contents (no 'root')")
    entries: list[tuple[str, str | None]] = [(toc["root"], None)]
    for part in toc.get("parts", []):
        entries += [(c["file"], part.get("caption")) for c in part.get("chapters", []) if "file" in c]
    return entries


def chromium_path() -> str:
    """Debian's chromium (``make browser`` installs it).

    Raises:
        ValueError: no chromium on the PATH.
    """
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise ValueError("make pdf / make slides need Debian's chromium: run `make browser` (apt-get install chromium)")
    return path


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on a free local port for the duration; yields the base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # no request log on stderr
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@contextmanager
def launch_chromium() -> Iterator[object]:
    """Headless Debian chromium through Playwright (no browser download); also the browser of the book's
    page reader in tests/test_book.py."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        try:
            yield browser
        finally:
            browser.close()


def wait_for_maths(page: object, timeout_ms: int = 60_000) -> None:
    """Wait until MathJax 3 has typeset the page (nothing to wait for on a page without maths)."""
    if not page.evaluate("() => document.querySelector('.math') !== null"):
        return
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=timeout_ms)
    page.evaluate("() => MathJax.startup.promise")


def print_page(browser: object, url: str, out: Path, title: str) -> None:
    """Print one page of the built book to ``out`` (A4, print stylesheet, page numbers in the footer)."""
    page = browser.new_page(viewport={"width": 1000, "height": 1400})
    try:
        response = page.goto(url, wait_until="load")
        if response is None or response.status != 200:
            raise ValueError(f"{url}: HTTP status {response and response.status}")
        wait_for_maths(page)
        page.evaluate(PREPARE_JS)
        page.add_style_tag(content=PRINT_CSS)
        page.emulate_media(media="print")
        page.pdf(path=str(out), format="A4", print_background=True, prefer_css_page_size=True, scale=PRINT_SCALE,
                 display_header_footer=True, header_template="<span></span>",
                 footer_template=FOOTER.format(title=title.replace("<", "&lt;")))
    finally:
        page.close()


def page_title(html_file: Path) -> str:
    """The page's first heading (its ``<title>`` without the book's name if there is none)."""
    import re

    text = html_file.read_text(errors="replace")
    m = re.search(r"<h1[^>]*>(.*?)</h1>", text, re.S) or re.search(r"<title>(.*?)</title>", text, re.S)
    title = re.sub(r"<[^>]+>|#$", "", m.group(1)).strip() if m else html_file.stem
    return re.sub(r"\s+", " ", title).replace("&amp;", "&").rstrip("#").strip()


def stamp_page_numbers(pdf: object, first: int = 1, total: int | None = None) -> None:
    """Stamp "N" (or "N / total") at the bottom right of every page of a pypdf ``PdfWriter``, from ``first``."""
    from pypdf import PageObject
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    for i, page in enumerate(pdf.pages):
        width, height = float(page.mediabox.width), float(page.mediabox.height)
        text = f"{first + i}" + (f" / {total}" if total else "")
        x = width - 14 / 25.4 * 72 - 0.52 * 7 * len(text)  # right margin 14 mm, Helvetica 7 pt
        overlay = PageObject.create_blank_page(width=width, height=height)
        overlay[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/FNum"): font})})
        content = DecodedStreamObject()
        content.set_data(f"BT /FNum 7 Tf 0.33 g {x:.1f} 14 Td ({text}) Tj ET".encode())
        overlay[NameObject("/Contents")] = content
        page.merge_page(overlay)


def number_handout(pdf: Path) -> int:
    """Stamp "N / total" on the pages of one printed page of the book; returns its page count."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(pdf))
    stamp_page_numbers(writer, 1, len(writer.pages))
    with pdf.open("wb") as f:
        writer.write(f)
    return len(writer.pages)


def contents_pdf(browser: object, out: Path, book_title: str, entries: list[tuple[str, str | None, int]]) -> int:
    """Print a contents page (``[(title, part, first page)]``) to ``out``; returns its page count."""
    from pypdf import PdfReader

    rows, part_seen = [], None
    for title, part, first in entries:
        if part and part != part_seen:
            rows.append(f"<h2>{html_lib.escape(part)}</h2>")
            part_seen = part
        rows.append(f'<div class="row"><span>{html_lib.escape(title)}</span><span class="dots"></span>'
                    f"<span>{first}</span></div>")
    page = browser.new_page()
    try:
        page.set_content(CONTENTS_HTML.format(title=html_lib.escape(book_title), rows="".join(rows),
                                              sub=f"Printed {time.strftime('%Y-%m-%d')} from the HTML edition"))
        page.pdf(path=str(out), format="A4", margin={"top": "20mm", "bottom": "20mm", "left": "18mm", "right": "18mm"})
    finally:
        page.close()
    return len(PdfReader(out).pages)


def merge(pdfs: list[tuple[Path, str, str | None]], out: Path, book_title: str, contents: Path | None = None) -> int:
    """Merge ``[(pdf, title, part)]`` into ``out``, after the ``contents`` page if given, with a bookmark per part
    and per page and page numbers through the whole book; returns its page count."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    if contents is not None:
        writer.append(PdfReader(contents), import_outline=False)
        writer.add_outline_item(title="Contents", page_number=0)
    parts: dict[str, object] = {}
    for pdf, title, part in pdfs:
        start = len(writer.pages)
        writer.append(PdfReader(pdf), import_outline=False)
        parent = None
        if part:
            if part not in parts:
                parts[part] = writer.add_outline_item(title=part, page_number=start)
            parent = parts[part]
        writer.add_outline_item(title=title, page_number=start, parent=parent)
    writer.add_metadata({"/Title": book_title})
    writer.page_mode = "/UseOutlines"
    with out.open("wb") as f:
        writer.write(f)
    return len(writer.pages)


def print_book(html: Path, toc: Path, out: Path, book_title: str | None = None,
               browser: object | None = None) -> dict[str, object]:
    """Print every page of ``toc`` from the built ``html`` into ``out`` and merge them into ``out/book.pdf``
    (``browser``: a Playwright Chromium to use; default: one launched here).

    Returns ``{"pages": page count of book.pdf, "seconds": wall time, "files": [per-page PDFs]}``.

    Raises:
        ValueError: ``html`` holds no built book (run ``make book`` first), or a page of the table of
            contents is missing from it.
    """
    from pypdf import PdfReader, PdfWriter

    start = time.perf_counter()
    if not (html / "index.html").exists():
        raise ValueError(f"{html}: no built book there — run `make book` first")
    entries = toc_entries(toc)
    missing = [p for p, _ in entries if not (html / f"{p}.html").exists()]
    if missing:
        raise ValueError(f"pages of {toc} missing from {html} (run `make book` again): {missing}")
    if book_title is None:
        config = toc.parent / "_config.yml"
        book_title = yaml.safe_load(config.read_text()).get("title", "Book") if config.exists() else "Book"
    out.mkdir(parents=True, exist_ok=True)
    printed: list[tuple[Path, str, str | None]] = []
    with serve(html) as base, (nullcontext(browser) if browser is not None else launch_chromium()) as browser:
        for i, (page_name, part) in enumerate(entries, 1):
            title = page_title(html / f"{page_name}.html")
            target = out / f"{Path(page_name).name}.pdf"
            t0 = time.perf_counter()
            print_page(browser, f"{base}/{page_name}.html", target, f"{book_title} — {title}")
            print(f"[{i}/{len(entries)}] {target.name}: {title} ({time.perf_counter() - t0:.1f} s)", flush=True)
            printed.append((target, title, part))
        # the handouts' page numbers are stamped after the book is merged (their numbers restart at 1)
        counts = [len(PdfReader(p).pages) for p, _, _ in printed]
        contents = out / "contents.pdf.tmp"
        n_contents = 0
        for _ in range(2):  # the contents' own length moves every first page by as many pages
            firsts = [n_contents + 1 + sum(counts[:k]) for k in range(len(counts))]
            n = contents_pdf(browser, contents, book_title, [(t, p, f) for (_, t, p), f in zip(printed, firsts)])
            if n == n_contents:
                break
            n_contents = n
    pages = merge(printed, out / "book.pdf", book_title, contents)
    contents.unlink()
    writer = PdfWriter(clone_from=PdfReader(out / "book.pdf"))
    stamp_page_numbers(writer, 1)
    with (out / "book.pdf").open("wb") as f:
        writer.write(f)
    for pdf, _, _ in printed:
        number_handout(pdf)
    seconds = time.perf_counter() - start
    print(f"{out / 'book.pdf'}: {pages} pages from {len(printed)} pages of the book, {seconds:.0f} s", flush=True)
    return {"pages": pages, "seconds": seconds, "files": [p for p, _, _ in printed]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html", help="the built book")
    parser.add_argument("--toc", type=Path, default=ROOT / "_toc.yml", help="its table of contents")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf", help="where the PDFs go")
    args = parser.parse_args(argv)
    try:
        print_book(args.html, args.toc, args.out)
    except ValueError as exc:
        print(f"make pdf: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
