"""Every chapter executed at ci scale through papermill, then the book rendered from those executed
notebooks, served locally and read by headless Chromium.

Each notebook runs once (papermill, ``scale`` injected as a parameter) with its own claims ledger:
every claim it records must have passed, and there must be at least one; every captioned figure cell
shows exactly one figure.  The book is then built from the executed copies (execution off, so the
notebooks are not run a second time) with warnings as errors.  For every page of ``_toc.yml``: the page loads; every internal link (and its #anchor) and every image
resolves; every piece of maths is typeset by the MathJax copy shipped with the book (no network) with
no MathJax error; theorem-like and exercise blocks are numbered; no uncaught JavaScript error apart
from the benign ones listed below.  A full-page screenshot of each page is saved under
``_build/test-artifacts/screenshots/``.  The student edition (``hide_solutions``) is checked to contain
no solution.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote, urlparse

import nbformat
import pytest
import yaml

from ntkbook.claims import read_ledgers

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "_build" / "test-artifacts" / "screenshots"
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"
NOTEBOOK_STEMS = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))

# Console messages known to be harmless, each with the reason.
BENIGN_JS = {
    # sphinx-thebe (loaded by Jupyter Book even with thebe off) declares its config script twice
    "Identifier 'THEBE_JS_URL' has already been declared": "sphinx-thebe double include",
    # pydata-sphinx-theme reads the colour mode from localStorage, empty in a fresh browser profile
    "Got invalid theme mode": "theme mode not yet stored",
}


def toc_pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        pages += [c["file"] for c in part.get("chapters", [])]
    return pages


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("Debian's chromium is needed for the browser tests: `make test` installs it "
                    "(apt-get install chromium, as root)")
    return path


def copy_book(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "_toc.yml", out / "_toc.yml")
    shutil.copytree(ROOT / "book", out / "book", ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints"))
    return out


def build(out: Path, *, student: bool = False) -> Path:
    """Build the copy of the book in ``out`` (notebooks already executed there) without executing it."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    if student:
        config["sphinx"]["config"]["hide_solutions"] = True
    config["execute"]["execute_notebooks"] = "off"
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = os.environ | {"NTKBOOK_SCALE": "ci", "NTKBOOK_LEDGER_DIR": str(out / "ledger"), "NTKBOOK_PROGRESS": "0"}
    proc = subprocess.run([str(JUPYTER_BOOK), "build", str(out), "--builder", "html", "-W", "-n", "--keep-going"],
                          capture_output=True, text=True, env=env)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, "book build failed:\n" + "\n".join(
        line for line in log.splitlines() if "WARNING" in line or "ERROR" in line or "Error" in line)[-6000:]
    return out / "_build" / "html"


def execute_notebook(path: Path, ledger: Path) -> str | None:
    """Run one notebook in place at ci scale; return the error text, or None if it ran to the end."""
    import papermill

    os.environ["NTKBOOK_LEDGER_DIR"] = str(ledger)
    os.environ["NTKBOOK_PROGRESS"] = "0"
    try:
        papermill.execute_notebook(str(path), str(path), parameters={"scale": "ci"}, kernel_name="python3",
                                   cwd=str(path.parent), progress_bar=False)
    except Exception as exc:  # reported by the notebook's own test, not here
        return f"{type(exc).__name__}: {exc}"[-4000:]
    finally:
        os.environ.pop("NTKBOOK_LEDGER_DIR", None)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # the injected parameters are an implementation detail of the test
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell.metadata["tags"].append("remove-cell")
    nbformat.write(nb, path)
    return None


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The book copied to a temporary directory, every chapter executed there once at ci scale."""
    out = copy_book(tmp_path_factory.mktemp("book"))
    errors = {path.stem: execute_notebook(path, out / "ledger" / path.stem)
              for path in sorted((out / "book").glob("*.ipynb"))}
    return out, errors


@pytest.mark.notebook
@pytest.mark.parametrize("stem", NOTEBOOK_STEMS)
def test_notebook_runs_at_ci_scale(executed, stem):
    out, errors = executed
    assert errors[stem] is None, f"the notebook failed:\n{errors[stem]}"
    records = read_ledgers(out / "ledger" / stem).get(stem, [])
    assert records, "the notebook recorded no claims"
    failed = [r["claim"] for r in records if r["status"] != "passed"]
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


@pytest.fixture(scope="module")
def site(executed):
    out, errors = executed
    failed = sorted(stem for stem, error in errors.items() if error)
    assert not failed, f"notebooks that failed (see their own tests): {failed}"
    html = build(out)
    handler = functools.partial(_Handler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield html, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


def _ids(html_file: Path) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', html_file.read_text(errors="replace")))


@pytest.mark.parametrize("page_name", toc_pages())
def test_page_in_a_real_browser(site, browser, page_name):
    html, base = site
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.on("console", lambda m: errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    _Handler.statuses.clear()
    url = f"{base}/{page_name}.html"
    response = page.goto(url, wait_until="load")
    assert response is not None and response.status == 200, f"{url}: status {response and response.status}"

    # maths: typeset by the local MathJax, every formula, no MathJax error
    n_math = page.locator(".math").count()
    if n_math:
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30_000)
        page.evaluate("() => MathJax.startup.promise")
        rendered = page.locator(".math mjx-container").count()
        assert rendered >= n_math, f"only {rendered} of {n_math} formulas typeset"
        assert page.locator("mjx-merror").count() == 0, "MathJax reported a TeX error"
        assert all("/_static/mathjax/" in s for s in page.eval_on_selector_all(
            "script[src*=mathjax]", "els => els.map(e => e.src)")), "MathJax must load from the book itself"
    page.wait_for_load_state("networkidle")

    # images
    broken = page.evaluate("() => Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))"
                           ".map(i => i.src)")
    assert not broken, f"images that did not load: {broken}"

    # internal links and anchors
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
    bad = []
    for href in hrefs:
        parsed = urlparse(href)
        if not href.startswith(base):
            continue
        target = html / unquote(parsed.path.lstrip("/"))
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            bad.append(href)
        elif parsed.fragment and target.suffix == ".html" and unquote(parsed.fragment) not in _ids(target):
            bad.append(href)
    assert not bad, f"internal links that do not resolve: {sorted(set(bad))[:10]}"

    # every request the page made was answered
    failed = [(p, s) for p, s in _Handler.statuses if s >= 400]
    assert not failed, f"requests that failed: {failed}"

    # numbered theorem-like blocks and exercises (chapters)
    titles = page.eval_on_selector_all(
        "div.proof.admonition > p.admonition-title, div.exercise.admonition > p.admonition-title",
        "els => els.map(e => [e.parentElement.className, e.textContent.trim()])")
    for cls, title in titles:
        if cls.strip() == "proof admonition":  # {prf:proof} blocks are not numbered
            continue
        assert re.search(r"\b\d+\b", title), f"unnumbered block {cls!r}: {title!r}"
    if re.match(r"book/\d", page_name):
        assert any("exercise" in c for c, _ in titles), "a chapter without exercises"
        assert any("proof" in c and c.strip() != "proof admonition" for c, _ in titles), "a chapter without results"

    unexpected = [e for e in errors if not any(b in e for b in BENIGN_JS)]
    assert not unexpected, f"JavaScript errors: {unexpected}"

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{page_name.replace('/', '_')}.png"), full_page=True)
    page.close()


def test_student_edition_hides_solutions(site, tmp_path):
    html, _ = site
    full = sum(p.read_text().count('class="solution') for p in html.glob("book/*.html"))
    assert full > 0, "the book has no solutions to hide"
    student = build(copy_book(tmp_path / "student"), student=True)
    hidden = sum(p.read_text().count('class="solution') for p in student.glob("book/*.html"))
    assert hidden == 0
    assert sum(p.read_text().count('class="exercise') for p in student.glob("book/*.html")) > 0
