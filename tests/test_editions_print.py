"""``make pdf`` and ``make slides`` on a tiny built book (one chapter with a theorem, its proof, maths, a
captioned figure, check verdicts, an exercise and its solution; a Claims ledger and an Errata page).

The PDF (``book/_ext/print_pdf.py``: the built HTML printed by headless Chromium, then merged with pypdf)
must exist with pages, a bookmark per page, and text that holds the chapter's title, the theorem's number,
maths typeset by MathJax (a ∑ glyph, no raw TeX) and the solution (the PDF is the teacher's book); one
PDF per page is written beside it.  The slide deck (``book/_ext/make_slides.py``) must fit every slide in
1280×720 once laid out in Chromium, show the theorem typeset by MathJax with no raw TeX delimiters, the
figure and the verdicts, split the long verdict list over several slides, leave the solution out, and
follow a lecture-notes override file.  A screenshot of the deck's theorem slide is kept in
``_build/test-artifacts/slides-01-tiny-1280.png``.  In its own file so that pytest-xdist (``--dist
loadfile``) runs it on its own worker beside the other book-level tests."""

from __future__ import annotations

import re
import shutil
import sys

import nbformat
import pytest
import test_book
import yaml
from test_book import ROOT, build, serve
from test_book_reader import display, notebook, png  # the reader's tiny-book notebooks

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import make_slides  # scripts in book/_ext, as execute_stale_chapters in tests/test_book_execution.py
import print_pdf

browser = test_book.browser  # the headless-Chromium fixture of the real book's reader

TITLE = "A tiny chapter on sums"
SOLUTION = "Count the apples one by one"
STATEMENT = ("```{prf:theorem} Sum of squares (Thm. 9.9 of a paper)\n:label: thm-tiny\n\n"
             "For every $n \\ge 1$,\n\n$$\n\\sum_{k=1}^n k^2 = \\frac{n(n+1)(2n+1)}{6}.\n$$\n```\n\n"
             "```{prf:proof}\nInduction on $n$: the step adds $(n+1)^2$ to both sides.\n```\n\n")
EXERCISE = ("```{exercise}\n:label: ex-tiny\n\nShow that $1 + 1 = 2$.\n```\n\n"
            f"```{{solution}} ex-tiny\n:class: dropdown\n\n{SOLUTION}.\n```\n")


def verdict(i: int) -> dict:
    return display({"text/html": f'<div class="ntkbook-verdict ntkbook-passed ntkbook-kind-bound"><span class='
                                  f'"ntkbook-badge ntkbook-passed">PASSED</span> <code class="ntkbook-claim">'
                                  f"thm-9.9/check-{i}</code> <span class=\"ntkbook-kind\">[bound]</span> <span "
                                  f'class="ntkbook-criterion">ratio ≤ 1 on {i + 1} samples; worst 0.9{i}; a '
                                  "false statement would show a ratio above 1 on some sample, as the text says"
                                  "</span></div>",
                     "text/plain": f"PASSED  thm-9.9/check-{i}  [bound]"})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny book built to HTML (no execution): ``(root, html)``."""
    out = tmp_path_factory.mktemp("print")
    book = out / "book"
    book.mkdir()
    for name in ("_ext", "_static", "_data"):
        if (ROOT / "book" / name).exists():
            shutil.copytree(ROOT / "book" / name, book / name)
    shutil.copy(ROOT / "book" / "references.bib", book / "references.bib")
    toc = {"format": "jb-book", "root": "book/intro", "parts": [
        {"caption": "Tiny", "chapters": [{"file": "book/01-tiny"}]},
        {"caption": "Reference", "chapters": [{"file": "book/claims-ledger"}, {"file": "book/errata"}]}]}
    (out / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    (book / "intro.md").write_text("# Tiny book\n\nA book of one chapter.\n")
    (book / "claims-ledger.md").write_text("# Claims ledger\n\n```{claims-ledger}\n```\n")
    (book / "errata.md").write_text("# Errata\n\nNone yet.\n")
    figure = ({"mystnb": {"figure": {"caption": "The squares $k^2$ against $k$.", "name": "fig-tiny"}}},
              [display({"image/png": png(), "text/plain": "<Figure size 180x120 with 1 Axes>"})])
    checks = ({"tags": ["nbval-check-output"]}, [verdict(i) for i in range(14)])
    about = (":::{admonition} About this chapter\n:class: tip\n\n**You will learn** how to sum squares.\n:::\n\n")
    nbformat.write(notebook(f"# {TITLE}\n\n" + about + STATEMENT + EXERCISE, [figure, checks]), book / "01-tiny.ipynb")
    (out / "ledger").mkdir()
    return out, build(out, strict=False)


def test_pdf_of_the_tiny_book(tiny, browser, tmp_path):
    from pypdf import PdfReader

    root, html = tiny
    out = tmp_path / "pdf"
    result = print_pdf.print_book(html, root / "_toc.yml", out, "Tiny book", browser)
    pages = ["intro", "01-tiny", "claims-ledger", "errata"]
    assert [p.name for p in result["files"]] == [f"{p}.pdf" for p in pages]
    assert all((out / f"{p}.pdf").stat().st_size > 0 for p in pages), "a per-page PDF is missing"
    reader = PdfReader(out / "book.pdf")
    assert len(reader.pages) == result["pages"] > 0
    outline = [item.title for item in reader.outline if not isinstance(item, list)]
    nested = [i.title for item in reader.outline if isinstance(item, list) for i in item]
    assert outline[0] == "Contents" and {"Tiny", "Reference"} <= set(outline)
    assert {TITLE, "Claims ledger", "Errata"} <= set(nested)
    contents = reader.pages[0].extract_text()
    assert TITLE in contents and "Errata" in contents, contents
    # page numbers run through the book (stamped last on each page), and within each handout
    assert reader.pages[-1].extract_text().split()[-1] == str(len(reader.pages))
    handout = PdfReader(out / "01-tiny.pdf")
    assert handout.pages[0].extract_text().split()[-3:] == ["1", "/", str(len(handout.pages))]
    chapter = " ".join(p.extract_text() for p in PdfReader(out / "01-tiny.pdf").pages)
    text = re.sub(r"\s+", " ", chapter)
    assert TITLE in text and "Theorem 1" in text and "Exercise 1" in text, text[:500]
    assert "∑" in text, "the sum was not typeset (no ∑ glyph in the PDF's text)"
    assert "\\sum" not in text and "\\frac" not in text and "$" not in text, "raw TeX in the PDF"
    assert SOLUTION in text, "the teacher's PDF shows the solutions"
    with pytest.raises(ValueError, match="make book"):
        print_pdf.print_book(tmp_path / "nowhere", root / "_toc.yml", out)


def test_slides_of_the_tiny_book_fit_and_render_maths(tiny, browser, tmp_path):
    root, html = tiny
    out, notes = tmp_path / "slides", tmp_path / "notes"
    notes.mkdir()
    (notes / "01-tiny.yml").write_text(yaml.safe_dump({
        "add": [{"after": "summary", "title": "Open questions", "body": "Does $\\sum_k k^3$ have a closed form? And $\\boldsymbol{w}$?"},  # an autoloaded package
                {"after": "added:1", "title": "Reading list",  # too long for one slide: split where it is made
                 "body": "\n\n".join(f"Paper {i}: sums of powers $\\sum_k k^{{{i}}}$." for i in range(30))}],
        "proof_idea": {"thm-tiny": "Induction: add $(n+1)^2$ to both sides."}}))
    measured = make_slides.make_slides(html, root / "_toc.yml", out, notes, browser=browser)
    assert list(measured) == ["01-tiny"], "one deck per chapter (the reference pages have none)"
    deck = out / "01-tiny.html"
    source = deck.read_text()
    assert SOLUTION not in source and "ex-tiny" not in source, "a deck shows no exercise solution"
    assert (out / "_static" / "revealjs" / "reveal.js").exists() and (out / "_static" / "mathjax" / "tex-chtml.js").exists()
    assert not re.search(r"(src|href)=\"https?://", source), "a deck loads nothing from the network"
    ids = re.findall(r'data-slide-id="([^"]+)"', source)
    assert ids[0] == "title" and "result:thm-tiny" in ids and "figure:fig-tiny" in ids
    assert ids[ids.index("summary"):] == ["summary", "added:1"] + ["added:2"] * ids.count("added:2"), ids
    assert ids.count("added:2") >= 2, "a slide too tall for 1280×720 is split into several"
    assert "Paper 29" in source
    assert sum(i.startswith("verdicts:") for i in ids) >= 2, "14 verdicts are split over several slides"
    assert "Thm. 9.9 of a paper" in source and "Induction: add" in source

    # the measurement sees what it should: a planted deck with a slide too wide, one too tall, one with raw TeX
    make_slides.write_deck(out / "planted.html", "planted", [
        make_slides.Slide("wide", "Wide", ['<div style="width: 1500px">wide</div>']),
        make_slides.Slide("tall", "Tall", ["<p>line</p>"] * 40),
        make_slides.Slide("raw", "Raw", ["<p>costs $5 and \\(x</p>"]),
        make_slides.Slide("fine", "Fine", ["<p>\\(x^2\\)</p>"])])
    server, base = serve(out)
    try:
        planted = {m["id"]: m for m in make_slides.measure(browser, f"{base}/planted.html")}
        assert [k for k, m in planted.items() if make_slides.overflows(m)] == ["wide", "tall"], planted
        assert [k for k, m in planted.items() if m["raw"]] == ["raw"] and planted["fine"]["math"] == 1, planted
        slides = make_slides.measure(browser, f"{base}/01-tiny.html")  # measured again, independently
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(f"{base}/01-tiny.html#/{ids.index('result:thm-tiny')}")
        page.wait_for_function("() => window.Reveal && Reveal.isReady() && window.MathJax && MathJax.startup "
                               "&& MathJax.startup.promise")
        page.evaluate("() => MathJax.startup.promise")
        artifacts = ROOT / "_build" / "test-artifacts"
        artifacts.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(artifacts / "slides-01-tiny-1280.png"))
        page.close()
    finally:
        server.shutdown()
    assert len(slides) == len(ids)
    too_big = [(s["id"], s["scrollWidth"], s["scrollHeight"], s["right"], s["bottom"]) for s in slides
               if make_slides.overflows(s)]
    assert not too_big, f"slides that do not fit 1280×720: {too_big}"
    by_id = {s["id"]: s for s in slides}
    assert by_id["result:thm-tiny"]["math"] >= 3 and by_id["added:1"]["math"] >= 2, "maths not typeset"
    assert not [s["id"] for s in slides if s["raw"] or s["errors"]], "raw TeX or a MathJax error on a slide"

    with pytest.raises(ValueError, match="no slide"):
        make_slides.apply_overrides(make_slides.chapter_slides(html / "book" / "01-tiny.html", tmp_path / "i")[1],
                                    {"drop": ["figure:no-such-figure"]})
    with pytest.raises(ValueError, match="unknown keys"):
        make_slides.apply_overrides([], {"reorder": []})
