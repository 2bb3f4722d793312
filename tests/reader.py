"""What a reader sees on a page of the built book, checked in headless Chromium (Playwright).

Used by ``tests/test_book.py`` on the real book and on a tiny book with one planted defect per page.
Every check returns a list of :class:`Problem` (category, message) instead of asserting, so that a
test can say which defect a page shows.  Categories:

``overflow``  something runs past the text column (``article.bd-article``) or the page scrolls
              sideways, outside a box that scrolls horizontally (code, tables, display maths, outputs);
              content clipped by a box that does not scroll counts too (the reader cannot see it)
``repr``      a printed raw dict or Python/NumPy/JAX repr in a cell output
``caption``   a content image that is not in a figure with a caption
``math``      maths not typeset by the MathJax copy shipped with the book, or a MathJax error
``link``      an internal link or #anchor that does not resolve, an image or request that failed
``verdict``   a chapter whose outputs do not show a verdict line for every claim it recorded
``ledger``    a Claims ledger page that does not list every claim of this build
``index``     an Index of results without rows, or that does not link every chapter with claims
``placeholder`` text standing in for numbers this build should report ("not measured yet", ...)
``table``     a table in a cell output that needs a sideways scroll at 1280 px, or a column header that is a
              code identifier (``max_param_difference``, ``dist2``) instead of words or maths
``js``        an uncaught JavaScript error
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

# Console messages known to be harmless, each with the reason.
BENIGN_JS = {
    # sphinx-thebe (loaded by Jupyter Book even with thebe off) declares its config script twice
    "Identifier 'THEBE_JS_URL' has already been declared": "sphinx-thebe double include",
    # pydata-sphinx-theme reads the colour mode from localStorage, empty in a fresh browser profile
    "Got invalid theme mode": "theme mode not yet stored",
}

WIDTHS = (1280, 390)  # a laptop with both sidebars open, a phone

# Raw reprs that must never be what a reader gets as an output (the verdict lines and tables are
# formatted text).  Each pattern is matched against every line of every text output.
RAW_REPR = [
    (re.compile(r"^\s*\{\s*['\"][^'\"]*['\"]\s*:"), "a printed dict"),
    (re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>"), "an object repr"),
    (re.compile(r"^\s*<[A-Z][\w.]*(?: [^<>]*)?>\s*$"), "a repr such as <Figure size …>"),
    (re.compile(r"\b(?:array|Array|DeviceArray)\(\s*[\[\d-]"), "an array repr"),
    (re.compile(r"\bnp\.(?:float|int|uint|bool)\d*\("), "a NumPy scalar repr"),
    # anywhere in a line: "Figure 1: NonlinearOutput(widths=(30, 100), ...)" printed mid-sentence too
    (re.compile(r"(?:^|[\s:,;=(\[])[A-Z]\w*\(\w+=[^)]"), "a dataclass/NamedTuple repr"),
]


@dataclass(frozen=True)
class Problem:
    category: str
    message: str

    def __str__(self) -> str:
        return f"[{self.category}] {self.message}"


def _ids(html_file: Path) -> frozenset[str]:
    """The element ids of a built HTML file, read once per file version (the API page links to its own
    anchors thousands of times: re-reading it for every link took minutes)."""
    stat = html_file.stat()
    return _ids_of(html_file, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _ids_of(html_file: Path, mtime_ns: int, size: int) -> frozenset[str]:
    return frozenset(re.findall(r'\bid="([^"]+)"', html_file.read_text(errors="replace")))


def wait_for_maths(page) -> list[Problem]:
    """Wait for MathJax; every formula typeset, no MathJax error, MathJax served by the book itself."""
    n_math = page.locator(".math").count()
    if not n_math:
        return []
    try:
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30_000)
        page.evaluate("() => MathJax.startup.promise")
    except Exception as exc:  # MathJax never started
        return [Problem("math", f"MathJax did not start: {exc}"[:300])]
    problems = []
    rendered = page.locator(".math mjx-container").count()
    if rendered < n_math:
        problems.append(Problem("math", f"only {rendered} of {n_math} formulas typeset"))
    errors = page.eval_on_selector_all("mjx-merror", "els => els.map(e => e.getAttribute('data-mjx-error') || "
                                       "e.textContent)")
    if errors:
        problems.append(Problem("math", f"{len(errors)} MathJax errors: {errors[:3]}"))
    scripts = page.eval_on_selector_all("script[src*=mathjax]", "els => els.map(e => e.src)")
    if not all("/_static/mathjax/" in s for s in scripts):
        problems.append(Problem("math", f"MathJax must load from the book itself, not {scripts}"))
    return problems


def resources(page, html: Path, base: str, statuses: list[tuple[str, int]]) -> list[Problem]:
    """Images loaded, internal links and anchors resolve, every request answered."""
    problems = []
    broken = page.evaluate("() => Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))"
                           ".map(i => i.src)")
    if broken:
        problems.append(Problem("link", f"images that did not load: {broken[:5]}"))
    bad = []
    for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"):
        if not href.startswith(base):
            continue
        parsed = urlparse(href)
        target = html / unquote(parsed.path.lstrip("/"))
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            bad.append(href)
        elif parsed.fragment and target.suffix == ".html" and unquote(parsed.fragment) not in _ids(target):
            bad.append(href)
    if bad:
        problems.append(Problem("link", f"internal links that do not resolve: {sorted(set(bad))[:10]}"))
    failed = [(p, s) for p, s in statuses if s >= 400]
    if failed:
        problems.append(Problem("link", f"requests that failed: {failed[:10]}"))
    return problems


# Everything inside the text column must fit it, unless a box between it and the column scrolls
# horizontally (overflow-x auto/scroll: code, tables, display maths, wide outputs); reported once per
# outermost offender.  A box that clips (overflow hidden/clip) hides what sticks out: reported as cut off.
_OVERFLOW_JS = """
() => {
  const doc = document.documentElement;
  const vw = doc.clientWidth;
  const out = [];
  if (doc.scrollWidth > vw + 1) out.push(`the page scrolls sideways (${doc.scrollWidth} px wide, window ${vw} px)`);
  const art = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const r = art.getBoundingClientRect();
  const left = Math.max(r.left, 0), right = Math.min(r.right, vw);
  const tex = new Map();  // MathJax container -> its TeX source, to name a formula by what the chapter wrote
  try { for (const m of MathJax.startup.document.math) tex.set(m.typesetRoot, m.math); } catch (e) {}
  const name = el => {
    if (tex.has(el)) {
      const kind = el.getAttribute('display') === 'true' ? 'display formula' : 'inline formula';
      return `${kind} $${Array.from(tex.get(el).trim().replace(/\\s+/g, ' ')).slice(0, 90).join('')}$`;
    }
    const txt = Array.from((el.innerText || el.textContent || '').trim().replace(/\\s+/g, ' ')).slice(0, 60).join('');
    const cls = (typeof el.className === 'string' && el.className) ? '.' + el.className.trim().split(/\\s+/).join('.') : '';
    return `<${el.tagName.toLowerCase()}${cls}> "${txt}"`;
  };
  const reported = [];
  for (const el of art.querySelectorAll('*')) {
    if (el.closest('mjx-assistive-mml')) continue;
    const b = el.getBoundingClientRect();
    if (b.width < 1 || b.height < 1) continue;
    if (b.right <= right + 1 && b.left >= left - 1) continue;
    if (reported.some(p => p.contains(el))) continue;
    let a = el.parentElement, how = 'runs past the text column';
    let scrolls = false;
    while (a && a !== art) {
      const s = getComputedStyle(a);
      if (s.overflowX === 'auto' || s.overflowX === 'scroll') { scrolls = true; break; }
      if (s.overflowX === 'hidden' || s.overflowX === 'clip') {
        const ab = a.getBoundingClientRect();  // a clipping box hides only what sticks out of it
        if (b.right > ab.right + 1 || b.left < ab.left - 1) { how = 'is cut off at the edge of ' + name(a).split(' ')[0]; break; }
      }
      a = a.parentElement;
    }
    if (scrolls) continue;
    reported.push(el);
    out.push(`${name(el)} ${how} (${Math.round(b.left)}–${Math.round(b.right)} px; column ${Math.round(left)}–${Math.round(right)} px)`);
    if (out.length >= 40) break;
  }
  return out;
}
"""


def overflow(page, width: int) -> list[Problem]:
    return [Problem("overflow", f"at {width} px: {m}") for m in page.evaluate(_OVERFLOW_JS)]


# At the laptop width a formula and the source code of a cell must fit the column: a scroll box is
# allowed there only for outputs and tables (on a phone, formulas and code may scroll in their own box).
_SCROLLS_AT_LAPTOP_JS = """
() => {
  const art = document.querySelector('article.bd-article') || document.body;
  const out = [];
  const tex = new Map();
  try { for (const m of MathJax.startup.document.math) tex.set(m.typesetRoot, m.math); } catch (e) {}
  for (const el of art.querySelectorAll('mjx-container, div.cell_input pre, div.highlight pre')) {
    if (el.closest('div.cell_output')) continue;
    // the box that scrolls: the element itself or its nearest ancestor with overflow-x auto/scroll
    let box = el;
    while (box && box !== art) {
      const s = getComputedStyle(box);
      if (s.overflowX === 'auto' || s.overflowX === 'scroll') break;
      box = box.parentElement;
    }
    if (!box || box === art) continue;
    // a formula's own width is that of its TeX box (mjx-math): italic glyphs overhang it by a few
    // pixels, which make a short formula's box scrollable without anything being cut short
    const inner = tex.has(el) ? el.querySelector('mjx-math') : null;
    const need = inner ? inner.getBoundingClientRect().width : box.scrollWidth;
    if (need <= box.clientWidth + 1) continue;
    const what = tex.has(el)
      ? `${el.getAttribute('display') === 'true' ? 'display' : 'inline'} formula $${Array.from(tex.get(el).trim().replace(/\\s+/g, ' ')).slice(0, 90).join('')}$`
      : `code "${Array.from((el.innerText || '').split('\\n').reduce((a, b) => b.length > a.length ? b : a, '').trim()).slice(0, 80).join('')}"`;
    out.push(`${what} needs a scrollbar (${Math.round(need)} px in a ${box.clientWidth} px box)`);
    if (out.length >= 40) break;
  }
  return [...new Set(out)];
}
"""


def scrolls_at_laptop_width(page) -> list[Problem]:
    """Formulas and cell source code that need a horizontal scrollbar at 1280 px (call at that width)."""
    return [Problem("overflow", f"at {WIDTHS[0]} px: {m}") for m in page.evaluate(_SCROLLS_AT_LAPTOP_JS)]


_WIDE_TABLES_JS = """
() => {
  const out = [];
  for (const table of document.querySelectorAll('article.bd-article div.cell_output table')) {
    let box = table.parentElement;
    while (box && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
    const width = box ? box.clientWidth : document.querySelector('article.bd-article').clientWidth;
    if (table.scrollWidth > width + 1) {
      const head = Array.from(table.querySelectorAll('th')).slice(0, 4).map(th => th.innerText.trim()).join(' | ');
      out.push(`a table ${Math.round(table.scrollWidth)} px wide in a ${width} px column (headers: ${head} …)`);
    }
  }
  return out;
}
"""

IDENTIFIER = re.compile(r"^(?:[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]*|[a-z]+[0-9]+)$")
"""A column header that is a code identifier: snake_case, camelCase, or letters run into digits (``dist2``)."""


def tables_at_laptop_width(page) -> list[Problem]:
    """Tables in cell outputs that are wider than the text column at 1280 px (call at that width), and
    column headers that are code identifiers."""
    problems = [Problem("table", f"at {WIDTHS[0]} px: {m}") for m in page.evaluate(_WIDE_TABLES_JS)]
    headers = page.eval_on_selector_all("article.bd-article div.cell_output table th",
                                        "els => els.map(e => e.innerText.trim())")
    problems += [Problem("table", f"a column header that is a code identifier: {h!r}")
                 for h in dict.fromkeys(headers) if IDENTIFIER.match(h)]
    return problems


def output_texts(page) -> list[str]:
    """The text of every text output (text/plain, streams) of the page's code cells."""
    return page.eval_on_selector_all("div.cell_output pre", "els => els.map(e => e.innerText)")


def raw_reprs(page) -> list[Problem]:
    problems = []
    for text in output_texts(page):
        for line in text.splitlines():
            for pattern, what in RAW_REPR:
                if pattern.search(line):
                    problems.append(Problem("repr", f"{what} in an output: {line.strip()[:100]!r}"))
                    break
    return problems[:10]


def captions(page) -> list[Problem]:
    """Every image of the text column is in a <figure> with a non-empty <figcaption>."""
    missing = page.eval_on_selector_all(
        "article.bd-article img",
        """els => els.filter(i => {
               const f = i.closest('figure');
               const c = f && f.querySelector('figcaption');
               return !(c && c.innerText.trim());
           }).map(i => i.src.split('/').pop())""")
    return [Problem("caption", f"a figure without a caption: {src}") for src in missing]


def verdicts(page, claim_ids: list[str]) -> list[Problem]:
    """A chapter shows one verdict line for every claim it recorded: the claim id in a cell output.  A
    chapter that recorded no claim at all is a defect too (every chapter asserts what it states)."""
    if not claim_ids:
        return [Problem("verdict", "a chapter that recorded no claim: nothing it states is asserted")]
    text = "\n".join(page.eval_on_selector_all("div.cell_output", "els => els.map(e => e.innerText)"))
    missing = [c for c in claim_ids if c not in text]
    if missing:
        return [Problem("verdict", f"{len(missing)} of {len(claim_ids)} claims recorded without a verdict line in "
                                   f"the outputs: {missing[:5]}")]
    return []


def ledger_page(page, claims_by_chapter: dict[str, list[str]]) -> list[Problem]:
    """The Claims ledger lists every claim of every chapter of this build."""
    text = page.inner_text("article.bd-article") if page.locator("article.bd-article").count() else ""
    missing = {stem: [c for c in ids if c not in text] for stem, ids in claims_by_chapter.items()}
    missing = {stem: ids for stem, ids in missing.items() if ids}
    if not claims_by_chapter:
        return [Problem("ledger", "no chapter recorded a claim: nothing to check the ledger against")]
    if missing:
        return [Problem("ledger", f"claims of this build missing from the ledger: "
                                  f"{ {s: ids[:3] for s, ids in list(missing.items())[:4]} } "
                                  f"({sum(map(len, missing.values()))} in all)")]
    return []


def index_page(page, chapters_with_claims: list[str]) -> list[Problem]:
    """The Index of results has rows, and links every chapter that recorded claims."""
    rows = page.locator("article.bd-article table tbody tr").count()
    if rows == 0:
        return [Problem("index", "the Index of results has no rows")]
    hrefs = page.eval_on_selector_all("article.bd-article a[href]", "els => els.map(e => e.href)")
    unlinked = [s for s in chapters_with_claims if not any(f"{s}.html" in h for h in hrefs)]
    if unlinked:
        return [Problem("index", f"chapters with claims that the Index of results does not link: {unlinked}")]
    return []


PLACEHOLDERS = ("not measured yet", "No claims were recorded", "Lorem ipsum", "TODO")


def placeholders(page) -> list[Problem]:
    """Every page reports this build's numbers: no placeholder text in the text column."""
    loc = page.locator("article.bd-article")
    text = loc.inner_text() if loc.count() else ""
    return [Problem("placeholder", f"placeholder text {p!r}") for p in PLACEHOLDERS if p in text]


def js_errors(errors: list[str]) -> list[Problem]:
    return [Problem("js", e) for e in errors if not any(b in e for b in BENIGN_JS)]
