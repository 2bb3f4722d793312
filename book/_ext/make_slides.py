"""``make slides``: one reveal.js slide deck per chapter, from the book that ``make book`` built.

A deck is made from the chapter's page in ``_build/html`` — the HTML that ``make book`` rendered from its
executed chapter, so the statements carry the book's numbers and their paper numbers, cross-references
and citations are resolved and the outputs are those of the build; nothing is executed.  In order:

* a title slide (the chapter's title and its "You will learn");
* for each result (``{prf:theorem}``, ``lemma``, ``proposition``, ``corollary``, ``definition``, …): its
  statement, then "Proof idea": the first paragraph of its proof, or else the first paragraph after it;
* each captioned figure of a figure cell, with its caption;
* the check verdicts (claim verdict lines of the check cells), where the chapter shows them;
* a summary table: each result and the verdicts shown after it, up to the next result.

No solution is shown (``{solution}`` blocks and exercises are left out).  Content too tall for one
1280×720 slide is split into several slides: the deck is laid out in headless Chromium, every slide
measured, and a slide that overflows is split (its blocks in two) or, with a single block, set in a
smaller type, until every slide fits (``--no-fit`` skips this and only estimates).

Per-chapter "lecture notes" overrides: ``book/slides/<chapter>.yml`` (see ``book/slides/README.md``)::

    drop: [figure:fig-221-landscape, verdicts:2]     # slide ids (printed by --list) to leave out
    proof_idea:                                      # replace a result's automatic proof idea
      prop-2-1: "Hölder's inequality on each slice: $|\\sum_k v_k x^\\top T_k z| \\le \\|v\\|_\\infty \\dots$"
    add:                                             # extra slides, after a given slide id
      - {after: summary, title: Open questions, body: "Does the rate hold for $L > 2$?"}
    move:                                            # put a slide after another one
      - {slide: figure:fig-shallow-sweep, after: "result:prop-2-1"}

The decks, reveal.js (from the pinned ``sphinx-revealjs`` package, which ships reveal.js's dist files) and
MathJax (the book's own offline copy, ``_build/html/_static/mathjax``) go to ``_build/slides/``; the decks
open with no network.

    python book/_ext/make_slides.py [--html _build/html] [--toc _toc.yml] [--out _build/slides] [CHAPTER ...]
"""

from __future__ import annotations

import argparse
import copy
import html as html_lib
import re
import shutil
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import yaml
from bs4 import BeautifulSoup, NavigableString, Tag

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from print_pdf import launch_chromium, serve, toc_entries  # noqa: E402  (a script beside this one)

WIDTH, HEIGHT = 1280, 720
# statement kinds that are results (sphinx-proof's classes); plain {prf:proof} blocks are proofs
RESULT_KINDS = ("theorem", "lemma", "proposition", "corollary", "definition", "conjecture", "remark",
                "assumption", "axiom", "criterion", "property", "example", "observation", "algorithm")
PROVED = ("theorem", "lemma", "proposition", "corollary", "property")  # "Proof idea"; others: "In the book"
VERDICTS_PER_SLIDE = 6
ROWS_PER_SLIDE = 9
MAX_LEVEL = 3  # smaller type steps for a single block that does not fit

CSS = """
.reveal { font-size: 30px; }
.reveal .slides section { text-align: left; box-sizing: border-box; padding: 24px 40px; height: 720px; }
.reveal h1 { font-size: 1.9em; text-transform: none; }
.reveal h2 { font-size: 1.25em; text-transform: none; margin-bottom: 0.4em; }
.reveal p, .reveal li { line-height: 1.35; }
.reveal .level-1 { font-size: 0.85em; } .reveal .level-2 { font-size: 0.72em; } .reveal .level-3 { font-size: 0.6em; }
.reveal figure { margin: 0; text-align: center; }
.reveal figure img { max-height: 470px; max-width: 100%; margin: 0 auto; display: block; }
.reveal figcaption { font-size: 0.55em; line-height: 1.3; text-align: left; }
.reveal .proof-idea { font-size: 0.8em; border-left: 4px solid #888; padding-left: 0.6em; margin-top: 0.6em; }
.reveal .proof-idea-label { font-weight: bold; }
.reveal .subtitle { font-size: 0.8em; color: #555; }
.reveal .context { font-size: 0.65em; color: #777; margin-top: 1.5em; }
.reveal .ntkbook-verdict { font-size: 0.55em; margin: 0.35em 0; line-height: 1.3; }
.reveal .ntkbook-badge { font-weight: bold; padding: 0 0.3em; border-radius: 3px; color: #fff; background: #666; }
.reveal .ntkbook-badge.ntkbook-passed { background: #1a7f37; }
.reveal .ntkbook-badge.ntkbook-failed { background: #cf222e; }
.reveal .ntkbook-badge.ntkbook-inconclusive { background: #9a6700; }
.reveal .ntkbook-criterion { display: block; color: #444; }
.reveal table { font-size: 0.55em; border-collapse: collapse; width: 100%; }
.reveal table th, .reveal table td { border-bottom: 1px solid #ccc; padding: 0.2em 0.4em; vertical-align: top; }
.reveal code { font-size: 0.9em; }
.reveal mjx-container[display="true"] { margin: 0.4em 0 !important; }
.reveal .continued { font-size: 0.6em; color: #777; }
"""

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{title}</title>
<link rel="stylesheet" href="_static/revealjs/reveal.css">
<link rel="stylesheet" href="_static/revealjs/theme/white.css">
<style>{css}</style>
<script>window.MathJax = {{ tex: {{ inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]],
  tags: "none" }}, options: {{ processHtmlClass: "math|slide-body" }},
  startup: {{ typeset: true }} }};</script>
<script defer src="_static/mathjax/tex-chtml.js"></script>
<script src="_static/revealjs/reveal.js"></script>
</head><body>
<div class="reveal"><div class="slides">
{sections}
</div></div>
<script>Reveal.initialize({{ width: {width}, height: {height}, margin: 0, center: false, hash: true,
  transition: "none", slideNumber: "c/t" }});</script>
</body></html>
"""


@dataclass
class Slide:
    """One slide: ``id`` names it for the overrides; ``blocks`` are HTML fragments, split when too tall."""

    id: str
    title: str
    blocks: list[str]
    level: int = 0
    splittable: bool = True
    part: int = 0  # 1, 2, … for the continuation slides of a split slide
    meta: dict = field(default_factory=dict)

    def html(self) -> str:
        cont = f' <span class="continued">({self.part + 1})</span>' if self.part else ""
        title = f"<h2>{self.title}{cont}</h2>" if self.title else ""
        body = "\n".join(self.blocks)
        return (f'<section data-slide-id="{html_lib.escape(self.id)}">{title}'
                f'<div class="slide-body level-{self.level}">{body}</div></section>')


# ---------------------------------------------------------------------------------------------------
# reading a built chapter page
# ---------------------------------------------------------------------------------------------------


def _clean(node: Tag) -> Tag:
    """A copy of ``node`` for a slide: no header links, no solutions, links to other pages as text."""
    node = copy.copy(node)
    for el in node.select(".headerlink, .solution, .toggle-button, button"):
        el.decompose()
    for a in node.select("a[href]"):
        if not a["href"].startswith(("http://", "https://")):
            a.name = "span"
            del a["href"]
    for el in node.select("[id]"):
        del el["id"]
    return node


def _inner(node: Tag) -> str:
    return "".join(str(c) for c in node.contents).strip()


def _text(node: Tag) -> str:
    return re.sub(r"\s+", " ", node.get_text(" ")).strip()


def _first_paragraph_after(node: Tag) -> Tag | None:
    """The paragraph of the proof that follows a statement, or else the first paragraph after it."""
    for sib in node.find_next_siblings(limit=3):
        if not isinstance(sib, Tag):
            continue
        classes = sib.get("class", [])
        if "proof" in classes and classes[:1] == ["proof"] and len(classes) == 2:  # a {prf:proof}
            p = sib.find("p")
            if p is not None:
                p = _clean(p)
                first = p.contents[0] if p.contents else None
                if isinstance(first, NavigableString) and first.strip().startswith("Proof."):
                    first.replace_with(first.replace("Proof.", "", 1))
                return _with_display(_drop_lead(p), sib.find("p"))
        if sib.name == "p":
            return _with_display(_drop_lead(_clean(sib)), sib)
        if sib.name in ("section", "h2", "h3") or "cell" in classes:
            return None
    return None


def _drop_lead(p: Tag) -> Tag:
    """``p`` without a leading "Idea of the proof." (the slide says "Proof idea." already)."""
    leads = ("idea of the proof.", "proof idea.", "proof.")
    lead = p.find(["em", "strong"])
    if lead is not None and p.contents and p.contents[0] is lead and lead.get_text().strip().lower() in leads:
        lead.decompose()
    first = p.find(string=True)
    if first is not None and first.strip().lower().startswith(leads):
        first.replace_with(first.split(".", 1)[1].lstrip())
    return p


def _with_display(p: Tag, source: Tag) -> Tag:
    """``p``, and the display formula after ``source`` when ``p`` ends with a colon or comma that announces it."""
    after = source.find_next_sibling()
    if _text(p).endswith((":", ",")) and after is not None and after.name == "div" and "math" in after.get("class", []):
        both = BeautifulSoup("<div></div>", "html.parser").div
        both.append(p)
        both.append(_clean(after))
        return both
    return p


def _shorten(p: Tag, budget: int = 420) -> str:
    """The paragraph cut after the first sentence that ends past ``budget`` characters (maths kept whole)."""
    out: list[str] = []
    length = 0
    for child in p.contents:
        if isinstance(child, NavigableString) and length > budget:
            m = re.search(r"[.;:](\s|$)", str(child))
            if m:
                out.append(html_lib.escape(str(child)[: m.start() + 1]) + " …")
                return "".join(out)
        out.append(html_lib.escape(str(child)) if isinstance(child, NavigableString) else str(child))
        length += len(child.get_text() if isinstance(child, Tag) else str(child))
    return "".join(out)


def _verdict_block(v: Tag) -> str:
    """A verdict line for a slide: badge, claim, kind and the criterion up to its first semicolon (the rest —
    resamples, rivals, what a false statement would show — is in the book)."""
    v = _clean(v)
    crit = v.select_one(".ntkbook-criterion")
    if crit is not None and ";" in crit.get_text():
        text = crit.get_text().split(";", 1)[0].strip()
        crit.clear()
        crit.append(text + " …")
    return str(v)


def chapter_slides(page: Path, images_out: Path, context: str = "") -> tuple[str, list[Slide]]:
    """``(title, slides)`` of a built chapter page; its figures' images are copied to ``images_out``;
    ``context`` (the book and part) goes on the title slide.

    Raises:
        ValueError: the page has no article (not a page of a Jupyter Book build).
    """
    soup = BeautifulSoup(page.read_text(), "html.parser")
    article = soup.select_one("article.bd-article")
    if article is None:
        raise ValueError(f"{page}: not a page of the built book (no article.bd-article)")
    h1 = article.find("h1")
    title = _text(_clean(h1)) if h1 else page.stem
    learn = ""
    about = article.select_one("div.admonition.tip")
    if about is not None and "About this chapter" in _text(about.select_one(".admonition-title") or about):
        p = next((p for p in about.find_all("p") if "learn" in _text(p).lower()), None)
        learn = f"<p class='subtitle'>{_inner(_clean(p))}</p>" if p else ""
    where = f"<p class='context'>{html_lib.escape(context)}</p>" if context else ""
    slides = [Slide("title", "", [where, f"<h1>{title}</h1>", learn], splittable=False)]
    results: list[Slide] = []
    verdict_run: list[str] = []
    attributed: dict[str, list[str]] = {}
    current = "(before the first result)"
    n_verdict_slides = 0

    def flush() -> None:
        nonlocal verdict_run, n_verdict_slides
        if verdict_run:
            n_verdict_slides += 1
            slides.append(Slide(f"verdicts:{n_verdict_slides}", "Checked in this build", verdict_run))
            verdict_run = []

    for node in article.find_all(["div", "figure"]):
        classes = node.get("class", [])
        if node.name == "div" and classes[:1] == ["proof"] and len(classes) >= 3 and classes[1] in RESULT_KINDS:
            if node.find_parent(class_=["solution", "exercise"]):
                continue
            flush()
            head = node.select_one(".admonition-title")
            content = node.select_one("section") or node
            label = node.get("id") or f"{classes[1]}-{len(results) + 1}"
            blocks = [_inner(_clean(content))]
            idea = _first_paragraph_after(node)
            if idea is not None and _text(idea):
                lead = "Proof idea." if classes[1] in PROVED else "In the book."
                blocks.append(f'<div class="proof-idea"><span class="proof-idea-label">{lead}</span> '
                              f"{_shorten(idea)}</div>")
            slide = Slide(f"result:{label}", _inner(_clean(head)) if head else classes[1].title(), blocks,
                          meta={"label": label, "title_text": _text(head) if head else label})
            results.append(slide)
            slides.append(slide)
            current = slide.meta["title_text"]
        elif node.name == "figure" and node.find_parent(class_="cell_output") and node.find("img"):
            flush()
            img = node.find("img")
            src = (page.parent / img["src"]).resolve()
            if src.exists():
                images_out.mkdir(parents=True, exist_ok=True)
                shutil.copy(src, images_out / src.name)
            fig = _clean(node)
            fig.find("img")["src"] = f"_images/{src.name}"
            cap = node.select_one(".caption-number")
            slides.append(Slide(f"figure:{node.get('id') or src.stem[:12]}",
                                _text(cap).strip() if cap else "Figure", [str(fig)], splittable=False))
        elif node.name == "div" and "cell" in classes and "tag_nbval-check-output" in classes:
            for v in node.select("div.ntkbook-verdict"):
                verdict_run.append(_verdict_block(v))
                badge = v.select_one(".ntkbook-badge")
                claim = v.select_one(".ntkbook-claim")
                attributed.setdefault(current, []).append(
                    f"{_text(badge) if badge else '?'} {_text(claim) if claim else ''}")
    flush()
    rows = []
    for r in results:
        got = attributed.get(r.meta["title_text"], [])
        statuses = [g.split()[0].lower() for g in got]
        summary = ", ".join(f"{statuses.count(s)} {s}" for s in dict.fromkeys(statuses)) or "—"
        rows.append(f"<tr><td>{r.title}</td><td>{summary}</td></tr>")
    if rows:
        slides.append(Slide("summary", "Summary", rows, meta={"table": "<tr><th>result</th><th>checks shown "
                                                                         "after it in this build</th></tr>"}))
    return title, slides


# ---------------------------------------------------------------------------------------------------
# overrides, splitting, writing
# ---------------------------------------------------------------------------------------------------


def _markup(text: str) -> list[str]:
    """Override text as HTML paragraphs: ``$…$`` and ``$$…$$`` maths to MathJax's delimiters, one paragraph
    per blank-line-separated block (the blocks a slide that does not fit is split at)."""
    text = html_lib.escape(text, quote=False)
    text = re.sub(r"\$\$(.+?)\$\$", r"\\[\1\\]", text, flags=re.S)
    text = re.sub(r"\$(.+?)\$", r"\\(\1\\)", text)
    return [f"<p>{p.strip()}</p>" for p in re.split(r"\n\s*\n", text) if p.strip()]


def apply_overrides(slides: list[Slide], overrides: dict, source: str = "overrides") -> list[Slide]:
    """Apply a chapter's lecture-notes overrides (``drop``, ``proof_idea``, ``add``, ``move``).

    Raises:
        ValueError: an unknown key, or a slide id or result label that the deck does not have.
    """
    unknown = set(overrides) - {"drop", "proof_idea", "add", "move"}
    if unknown:
        raise ValueError(f"{source}: unknown keys {sorted(unknown)} (allowed: drop, proof_idea, add, move)")
    by_id = {s.id: s for s in slides}

    def need(slide_id: str) -> Slide:
        if slide_id not in by_id:
            raise ValueError(f"{source}: no slide {slide_id!r} in this deck; its slides: {sorted(by_id)}")
        return by_id[slide_id]

    for label, text in (overrides.get("proof_idea") or {}).items():
        s = need(f"result:{label}")
        paragraphs = "<br>".join(p[3:-4] for p in _markup(str(text)))
        s.blocks = [*s.blocks[:1], f'<div class="proof-idea"><span class="proof-idea-label">Proof idea.</span> '
                                   f"{paragraphs}</div>"]
    for slide_id in overrides.get("drop") or []:
        slides.remove(need(slide_id))
    for item in overrides.get("move") or []:
        s, after = need(item["slide"]), need(item["after"])
        slides.remove(s)
        slides.insert(slides.index(after) + 1, s)
    for i, item in enumerate(overrides.get("add") or []):
        if "after" not in item or "title" not in item:
            raise ValueError(f"{source}: each added slide needs 'after' and 'title': {item}")
        new = Slide(item.get("id", f"added:{i + 1}"), html_lib.escape(str(item["title"])),
                    _markup(str(item.get("body", ""))))
        slides.insert(slides.index(need(item["after"])) + 1, new)
        by_id[new.id] = new
    return slides


def _estimate_chunks(slides: list[Slide]) -> list[Slide]:
    """Split verdict and summary slides into pieces of a size that fits before measuring."""
    out: list[Slide] = []
    for s in slides:
        size = VERDICTS_PER_SLIDE if s.id.startswith("verdicts:") else ROWS_PER_SLIDE if s.id == "summary" else 0
        if size and len(s.blocks) > size:
            for k in range(0, len(s.blocks), size):
                out.append(Slide(s.id, s.title, s.blocks[k:k + size], s.level, s.splittable, k // size, s.meta))
        else:
            out.append(s)
    return out


def _render(slide: Slide) -> str:
    if "table" in slide.meta:
        body = Slide(slide.id, slide.title, [f"<table>{slide.meta['table']}{''.join(slide.blocks)}</table>"],
                     slide.level, part=slide.part)
        return body.html()
    return slide.html()


def write_deck(path: Path, title: str, slides: list[Slide]) -> None:
    path.write_text(PAGE.format(title=html_lib.escape(title), css=CSS, width=WIDTH, height=HEIGHT,
                                sections="\n".join(_render(s) for s in slides)))


MEASURE_JS = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const out = [];
  const slides = Reveal.getSlides();
  for (let i = 0; i < slides.length; i++) {
    Reveal.slide(i);
    await new Promise(r => requestAnimationFrame(() => r()));
    const s = slides[i];
    const body = s.querySelector('.slide-body');
    let bottom = 0, right = 0;
    const top = s.getBoundingClientRect().top, left = s.getBoundingClientRect().left;
    for (const el of s.querySelectorAll('*')) {
      if (el.closest('mjx-container') && el.tagName !== 'MJX-CONTAINER') continue;  // clipped glyph parts
      const r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      bottom = Math.max(bottom, r.bottom - top); right = Math.max(right, r.right - left);
    }
    out.push({index: i, id: s.dataset.slideId, scrollHeight: s.scrollHeight, scrollWidth: s.scrollWidth,
              bottom: Math.ceil(bottom), right: Math.ceil(right),
              raw: /\\$|\\\\\\(|\\\\\\[/.test((body || s).innerText),
              math: s.querySelectorAll('mjx-container').length,
              errors: s.querySelectorAll('mjx-merror').length});
  }
  Reveal.slide(0);
  return out;
}"""


def measure(browser: object, url: str) -> list[dict]:
    """Lay the deck out at 1280×720 in Chromium and measure every slide: ``[{index, id, scrollHeight,
    scrollWidth, bottom, right, raw, math, errors}]`` (``bottom``/``right``: the extent of its content;
    ``raw``: untypeset TeX delimiters in its text; ``math``/``errors``: MathJax output and error elements)."""
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page.goto(url, wait_until="load")
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30_000)
        page.wait_for_function("() => !document.querySelector('.math, .slide-body') || "
                               "(window.MathJax && MathJax.startup && MathJax.startup.promise)", timeout=60_000)
        return page.evaluate(MEASURE_JS)
    finally:
        page.close()


def overflows(m: dict) -> bool:
    """Whether a measured slide runs past 1280×720."""
    return max(m["scrollHeight"], m["bottom"]) > HEIGHT + 1 or max(m["scrollWidth"], m["right"]) > WIDTH + 1


def fit(slides: list[Slide], path: Path, title: str, browser: object, base: str, rounds: int = 6) -> list[dict]:
    """Split or shrink the slides that overflow until every slide fits; returns the last measurements."""
    for _ in range(rounds):
        write_deck(path, title, slides)
        measured = measure(browser, f"{base}/{path.name}")
        bad = {m["index"] for m in measured if overflows(m)}
        if not bad:
            return measured
        new: list[Slide] = []
        for i, s in enumerate(slides):
            if i not in bad:
                new.append(s)
            elif s.splittable and len(s.blocks) > 1:
                half = (len(s.blocks) + 1) // 2
                new += [Slide(s.id, s.title, s.blocks[:half], s.level, True, s.part, s.meta),
                        Slide(s.id, s.title, s.blocks[half:], s.level, True, s.part + 1, s.meta)]
            elif s.level < MAX_LEVEL:
                new.append(Slide(s.id, s.title, s.blocks, s.level + 1, s.splittable, s.part, s.meta))
            else:
                new.append(s)
        # renumber the parts of split slides in order
        counts: dict[str, int] = {}
        for s in new:
            s.part = counts.get(s.id, 0)
            counts[s.id] = s.part + 1
        slides[:] = new
    write_deck(path, title, slides)
    return measure(browser, f"{base}/{path.name}")


def copy_assets(html: Path, out: Path) -> None:
    """reveal.js's dist files (from the pinned sphinx-revealjs package) and the book's MathJax into ``out/_static``."""
    files = metadata.files("sphinx-revealjs") or []
    dist = next((f for f in files if str(f).endswith("revealjs/dist/reveal.js")), None)
    if dist is None:
        raise ValueError("reveal.js not found: install requirements.txt (sphinx-revealjs ships reveal.js)")
    static = out / "_static"
    shutil.rmtree(static, ignore_errors=True)
    shutil.copytree(Path(dist.locate()).parent, static / "revealjs", ignore=shutil.ignore_patterns("*.map", "*.esm.js"))
    mathjax = html / "_static" / "mathjax"
    if not (mathjax / "tex-chtml.js").exists():
        raise ValueError(f"{mathjax}: the book's MathJax copy is missing — run `make book` first")
    (static / "mathjax").mkdir(parents=True)
    shutil.copy(mathjax / "tex-chtml.js", static / "mathjax" / "tex-chtml.js")
    # its fonts (output/), the TeX packages it loads on demand (input/tex/extensions/: \boldsymbol, \cancel, …)
    # and the menu's accessibility components: 4 MB of the 24 MB copy, the rest being other combined components
    for sub in ("output", "input", "a11y", "ui"):
        if (mathjax / sub).is_dir():
            shutil.copytree(mathjax / sub, static / "mathjax" / sub)


def chapter_pages(toc: Path, only: list[str] | None = None) -> list[str]:
    """The chapter pages of the table of contents (``book/NN…``), or those named in ``only`` (stems).

    Raises:
        ValueError: a name in ``only`` that is not a chapter of the table of contents.
    """
    chapters = [p for p, _ in toc_entries(toc) if re.match(r"\d", Path(p).name)]
    if not only:
        return chapters
    stems = {Path(p).name: p for p in chapters}
    missing = [s for s in only if s not in stems]
    if missing:
        raise ValueError(f"not chapters of {toc}: {missing}; chapters: {sorted(stems)}")
    return [stems[s] for s in only]


def make_slides(html: Path, toc: Path, out: Path, notes: Path, only: list[str] | None = None,
                fit_in_browser: bool = True, browser: object | None = None) -> dict[str, list[dict]]:
    """Write one deck per chapter to ``out/<chapter>.html``; returns each deck's slide measurements
    (empty lists with ``fit_in_browser=False``).  ``browser``: a Playwright Chromium to use (default: one
    launched here).

    Raises:
        ValueError: no built book in ``html``, a chapter page missing, or a bad override file.
    """
    start = time.perf_counter()
    if not (html / "index.html").exists():
        raise ValueError(f"{html}: no built book there — run `make book` first")
    pages = chapter_pages(toc, only)
    parts = dict(toc_entries(toc))
    config = toc.parent / "_config.yml"
    book_title = (yaml.safe_load(config.read_text()) or {}).get("title", "") if config.exists() else ""
    missing = [p for p in pages if not (html / f"{p}.html").exists()]
    if missing:
        raise ValueError(f"chapters missing from {html} (run `make book` again): {missing}")
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(html, out)
    decks: dict[str, tuple[Path, str, list[Slide]]] = {}
    for page in pages:
        stem = Path(page).name
        title, slides = chapter_slides(html / f"{page}.html", out / "_images", " · ".join(
            x for x in (book_title, parts.get(page)) if x))
        notes_file = notes / f"{stem}.yml"
        if notes_file.exists():
            slides = apply_overrides(slides, yaml.safe_load(notes_file.read_text()) or {}, str(notes_file))
        decks[stem] = (out / f"{stem}.html", title, _estimate_chunks(slides))
    measured: dict[str, list[dict]] = {}
    if not fit_in_browser:
        for stem, (path, title, slides) in decks.items():
            write_deck(path, title, slides)
            measured[stem] = []
        return measured
    with serve(out) as base, (nullcontext(browser) if browser is not None else launch_chromium()) as browser:
        for i, (stem, (path, title, slides)) in enumerate(decks.items(), 1):
            t0 = time.perf_counter()
            measured[stem] = fit(slides, path, title, browser, base)
            bad = [m["id"] for m in measured[stem] if overflows(m)]
            note = f"; still overflowing: {bad}" if bad else ""
            print(f"[{i}/{len(decks)}] {path.name}: {len(slides)} slides ({time.perf_counter() - t0:.1f} s){note}",
                  flush=True)
    print(f"{len(decks)} deck(s) in {out}, {time.perf_counter() - start:.0f} s", flush=True)
    return measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="chapter stems (default: every chapter of the toc)")
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html", help="the built book")
    parser.add_argument("--toc", type=Path, default=ROOT / "_toc.yml", help="its table of contents")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "slides", help="where the decks go")
    parser.add_argument("--notes", type=Path, default=ROOT / "book" / "slides", help="the lecture-notes overrides")
    parser.add_argument("--no-fit", action="store_true", help="do not lay the decks out in Chromium to split them")
    parser.add_argument("--list", action="store_true", help="print each deck's slide ids (for the overrides)")
    args = parser.parse_args(argv)
    try:
        measured = make_slides(args.html, args.toc, args.out, args.notes, args.chapters, not args.no_fit)
    except ValueError as exc:
        print(f"make slides: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for stem in measured:
            ids = re.findall(r'data-slide-id="([^"]+)"', (args.out / f"{stem}.html").read_text())
            print(stem + ": " + ", ".join(dict.fromkeys(ids)))
    bad = {stem: [m["id"] for m in ms if overflows(m)] for stem, ms in measured.items()}
    bad = {k: v for k, v in bad.items() if v}
    if bad:
        print(f"make slides: slides that do not fit 1280×720: {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
