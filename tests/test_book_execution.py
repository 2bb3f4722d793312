"""How the book is executed, on tiny books: ``make book`` re-executes only the chapters whose code changed
(Jupyter Book's execution cache) and keeps every chapter's claims in the ledger; nbval's re-execution in
``make test`` is followed by a byte-for-byte comparison of its claims ledger with papermill's (the root
``conftest.py``).  In its own file so that pytest-xdist (``--dist loadfile``) runs it beside the real
book's pages instead of after them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
import yaml
from test_book import JUPYTER_BOOK, ROOT

sys.path.insert(0, str(ROOT / "book" / "_ext"))
from execute_stale_chapters import cpu_shares  # a script in book/_ext, as in tests/execute_chapters.py

# ---------------------------------------------------------------------------------------------------
# make book: only edited chapters are executed again, and the ledger stays complete
# ---------------------------------------------------------------------------------------------------


MARKER = "zqx7f3a9c"  # one word (so the search index keeps it whole), in the tiny chapters' solutions only


def _tiny_chapter(stem: str, value: int) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [
        nbformat.v4.new_markdown_cell(f"# Chapter {stem}\n\n```{{prf:proposition}} Demo\n:label: demo-{stem}\n\n"
                                      f"{value} + 1 = {value + 1}.\n```"),
        nbformat.v4.new_code_cell('import os\n\nscale = os.environ.get("NTKBOOK_SCALE", "book")',
                                  metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(f'import ntkbook as nb\n\nscale = nb.setup("{stem}", scale)\n'
                                  f'with open("runs.txt", "a") as f:\n    f.write("{stem}\\n")\n'
                                  'if hasattr(os, "sched_getaffinity"):\n'
                                  '    with open("cpus.txt", "a") as f:\n'
                                  '        f.write(" ".join(map(str, sorted(os.sched_getaffinity(0)))) + "\\n")'),
        nbformat.v4.new_code_cell(f"x = {value} + 1\n"
                                  f'nb.claims.condition("demo/{stem}-sum", x == {value + 1}, criterion="x = {value + 1}", '
                                  f'ref="book, demo", label="demo-{stem}", x=x)'),
        # an exercise with its solution in one cell, and a second solution alone in its cell (the student
        # edition drops that cell): prose with the marker, and maths
        nbformat.v4.new_markdown_cell(f"## Exercises\n\n```{{exercise}}\n:label: ex-{stem}\n\nWhy is x = {value + 1}?\n```\n\n"
                                      f"```{{solution}} ex-{stem}\n:class: dropdown\n\nBecause {MARKER} says so: "
                                      f"$x = {value} + 1$.\n```\n\nAfter the exercises."),
        nbformat.v4.new_markdown_cell(f"````{{solution}} ex-{stem}\n:label: sol2-{stem}\n\nAgain {MARKER}:\n\n"
                                      "```python\nx = 2\n```\n````"),
    ]
    return nb


@pytest.fixture(scope="module")
def tiny_builds(tmp_path_factory) -> dict:
    """A tiny book of two chapters (each with a claim, an exercise and two solutions) built as make book,
    make book-student and make handout build the real one, once for the tests of this file: the chapters
    executed into the cache before the first build (book/_ext/execute_stale_chapters.py, two at a time); a
    second build after one chapter's code changed; the student copy (book/_ext/editions.py) built with the
    book's execution cache; the notebook bundle written from that cache.  Returns what the tests check."""
    tmp_path = tmp_path_factory.mktemp("editions")
    out: dict = {"tmp": tmp_path}
    book = tmp_path / "tiny"
    (book / "book").mkdir(parents=True)
    shutil.copytree(ROOT / "book" / "_ext", book / "book" / "_ext")
    shutil.copy(ROOT / "book" / "references.bib", book / "book" / "references.bib")
    for name in ("_static", "_data"):
        if (ROOT / "book" / name).exists():
            shutil.copytree(ROOT / "book" / name, book / "book" / name)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    out["config"] = config
    (book / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    toc = {"format": "jb-book", "root": "book/intro", "parts": [{"caption": "Tiny", "chapters": [
        {"file": "book/01-a"}, {"file": "book/02-b"}, {"file": "book/claims-ledger"}]}]}
    (book / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    (book / "book" / "intro.md").write_text("# Tiny book\n")
    (book / "book" / "claims-ledger.md").write_text("# Claims ledger\n\n```{claims-ledger}\n```\n")
    nbformat.write(_tiny_chapter("01-a", 1), book / "book" / "01-a.ipynb")
    nbformat.write(_tiny_chapter("02-b", 2), book / "book" / "02-b.ipynb")
    env = {k: v for k, v in os.environ.items() if k not in ("NTKBOOK_LEDGER_DIR", "NTKBOOK_COMMIT")}
    env |= {"NTKBOOK_SCALE": "ci"}
    runs = book / "book" / "runs.txt"
    out |= {"book": book, "env": env}

    def build_cached(root: Path = book) -> str:
        proc = subprocess.run([str(JUPYTER_BOOK), "build", str(root), "--builder", "html"],
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
        return (root / "_build" / "html" / "book" / "claims-ledger.html").read_text()

    pre = subprocess.run([sys.executable, str(book / "book" / "_ext" / "execute_stale_chapters.py"), "--jobs", "2"],
                         capture_output=True, text=True, env=env)
    assert pre.returncode == 0, (pre.stdout + pre.stderr)[-4000:]
    out["pre"] = pre.stdout
    out["pre_runs"] = sorted(runs.read_text().split())
    cpus = book / "book" / "cpus.txt"
    out["ran_on"] = [set(map(int, line.split())) for line in cpus.read_text().splitlines()] if cpus.exists() else []
    out["first"] = build_cached()
    out["first_runs"] = sorted(runs.read_text().split())
    out["first_json"] = json.loads((book / "_build" / "html" / "claims-ledger.json").read_text())
    out["book_html"] = tmp_path / "book-html"  # the normal edition, kept for the scan's planted failure
    shutil.copytree(book / "_build" / "html", out["book_html"])
    runs.unlink()

    nbformat.write(_tiny_chapter("01-a", 5), book / "book" / "01-a.ipynb")  # edit one chapter's code
    shutil.rmtree(book / "_build" / "html")
    out["second"] = build_cached()
    out["second_runs"] = runs.read_text().split()
    runs.unlink()

    # as make book-student: a copy of the book without solutions (editions.py student-copy), in another folder,
    # whose _build/.jupyter_cache is the book's
    student = tmp_path / "student"
    copy = subprocess.run([sys.executable, str(book / "book" / "_ext" / "editions.py"), "student-copy", str(student),
                           "--root", str(book)], capture_output=True, text=True, env=env)
    assert copy.returncode == 0, copy.stdout + copy.stderr
    (student / "_build").mkdir()
    (student / "_build" / ".jupyter_cache").symlink_to(book / "_build" / ".jupyter_cache")
    start = time.perf_counter()
    out["third"] = build_cached(student)
    out["student_seconds"] = time.perf_counter() - start
    out["student"] = student

    # as make handout
    start = time.perf_counter()
    handout = subprocess.run([sys.executable, str(book / "book" / "_ext" / "editions.py"), "handout",
                              str(tmp_path / "handout"), "--root", str(book)], capture_output=True, text=True, env=env)
    out["handout_seconds"] = time.perf_counter() - start
    assert handout.returncode == 0, handout.stdout + handout.stderr
    out["handout"] = tmp_path / "handout"
    return out


def test_cached_rebuild_executes_only_the_edited_chapter_and_keeps_the_ledger(tiny_builds):
    """As make book: the chapters are executed into the cache before the first build (two at a time,
    book/_ext/execute_stale_chapters.py), so that build executes none; a second build, after one chapter's
    code changed, executes that chapter only; and the Claims ledger page lists the claims of both chapters
    after each build.  As make book-student: a copy built in another folder with the book's execution cache
    executes no chapter."""
    t = tiny_builds
    book = t["book"]
    assert "executing 2 chapter(s), 2 at a time" in t["pre"]
    assert t["pre_runs"] == ["01-a", "02-b"]
    shares = cpu_shares(2)
    if shares is not None:  # each kernel ran on one job's share of the CPUs, not on all of them
        assert len(t["ran_on"]) == 2 and all(cpus in shares for cpus in t["ran_on"]), (t["ran_on"], shares)
        assert "each job on its own CPUs" in t["pre"]
    assert t["config"]["execute"]["execute_notebooks"] == "cache", "make book must use the execution cache"
    assert t["first_runs"] == ["01-a", "02-b"], "the build executed a pre-executed chapter again"
    first = t["first"]
    assert "demo/01-a-sum" in first and "demo/02-b-sum" in first
    assert 'href="01-a.html#demo-01-a"' in first and 'href="02-b.html#demo-02-b"' in first  # linked to statements

    second = t["second"]
    assert t["second_runs"] == ["01-a"], "only the edited chapter is executed again"
    assert "demo/01-a-sum" in second and "demo/02-b-sum" in second, "the ledger lost the cached chapter"
    caches = list((book / "_build" / ".jupyter_cache").iterdir())
    assert [c.name.split("-")[0] for c in caches] == ["ci"] and (caches[0] / "ledger" / "02-b.jsonl").exists()

    # the student edition: a copy of the book with solutions removed, built with the book's cache
    third = t["third"]
    assert not (t["student"] / "book" / "runs.txt").exists(), "the student edition executed a chapter the book had cached"
    assert "demo/01-a-sum" in third and "demo/02-b-sum" in third
    assert [c.name for c in (book / "_build" / ".jupyter_cache").iterdir()] == [caches[0].name]


def _files_containing(folder: Path, needles: tuple[bytes, ...]) -> dict[str, list[str]]:
    """Every file under ``folder`` (pages, _sources, _downloads, searchindex.js, executed notebooks, …) in which
    one of ``needles`` occurs, inside zip archives too: relative path → the needles found."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        blobs = [(str(path.relative_to(folder)), path.read_bytes())]
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                blobs += [(f"{blobs[0][0]}!{n}", zf.read(n)) for n in zf.namelist()]
        for name, data in blobs:
            hits = [n.decode() for n in needles if n in data]
            if hits:
                found[name] = hits
    return found


SOLUTION_TEXT = (MARKER.encode(), b"{solution}")


def test_student_edition_has_no_solution_in_any_file(tiny_builds):
    """make book-student: no file of the built student edition (pages, ``_sources/`` notebooks, downloads, the
    search index, executed notebooks) holds a solution's text or directive; the same scan finds them in
    the normal edition (planted failure: the scan sees the sources and the search index); the exercises
    themselves stay."""
    t = tiny_builds
    book_hits = _files_containing(t["book_html"], SOLUTION_TEXT)
    assert any(p.startswith("_sources/") and p.endswith(".ipynb") for p in book_hits), book_hits
    assert any(p.startswith("book/01-a.html") for p in book_hits), book_hits
    assert any(p == "searchindex.js" for p in book_hits), book_hits  # the search index holds solution prose
    student = t["student"] / "_build"
    assert not _files_containing(student / "html", SOLUTION_TEXT)
    executed = student / "jupyter_execute"
    assert not _files_containing(executed, SOLUTION_TEXT) if executed.exists() else True
    page = (student / "html" / "book" / "01-a.html").read_text()
    assert "Why is x = 6?" in page and "After the exercises." in page
    source = nbformat.read(student / "html" / "_sources" / "book" / "01-a.ipynb", as_version=4)
    assert [c.cell_type for c in source.cells] == ["markdown", "code", "code", "code", "markdown"]


def test_handout_bundle_has_runnable_and_executed_notebooks_without_solutions(tiny_builds):
    """make handout: the zip and folder hold each chapter as a source notebook (no outputs) and as an executed
    one (make book's cached outputs, none executed again), both valid nbformat and without solutions, plus
    the package, requirements and a README."""
    t = tiny_builds
    archive = t["handout"] / "ntkbook-notebooks.zip"
    assert archive.exists() and (t["handout"] / "ntkbook-notebooks" / "README.md").exists()
    assert not (t["book"] / "book" / "runs.txt").exists(), "make handout executed a chapter"
    with zipfile.ZipFile(archive) as zf:
        names = set(zf.namelist())
        for stem in ("01-a", "02-b"):
            source = nbformat.reads(zf.read(f"ntkbook-notebooks/notebooks/{stem}.ipynb").decode(), as_version=4)
            executed = nbformat.reads(zf.read(f"ntkbook-notebooks/executed/{stem}.ipynb").decode(), as_version=4)
            nbformat.validate(source)
            nbformat.validate(executed)
            assert not any(c.get("outputs") for c in source.cells if c.cell_type == "code")
            assert any(c.get("outputs") for c in executed.cells if c.cell_type == "code")
            assert [c.source for c in source.cells] == [c.source for c in executed.cells]
        assert "demo/01-a-sum" in zf.read("ntkbook-notebooks/executed/01-a.ipynb").decode()
    for name in ("README.md", "requirements.txt", "pyproject.toml", "ntkbook/__init__.py", "ntkbook/claims.py"):
        assert f"ntkbook-notebooks/{name}" in names, name
    assert not any("__pycache__" in n for n in names)
    assert not _files_containing(t["handout"], SOLUTION_TEXT)
    assert "jupyterlab-myst" in (t["handout"] / "ntkbook-notebooks" / "README.md").read_text()


def test_each_edition_writes_its_claims_ledger_as_json(tiny_builds):
    """The claims ledger of each edition is written next to its HTML (claims-ledger.json) with the edition,
    the package version, the scale, the commit and every chapter's records, and the ledger page links it."""
    import ntkbook

    t = tiny_builds
    data = t["first_json"]
    student = json.loads((t["student"] / "_build" / "html" / "claims-ledger.json").read_text())
    for edition, d in (("book", data), ("student", student)):
        assert d["edition"] == edition and d["version"] == ntkbook.__version__ and d["scale"] == ["ci"]
        assert set(d["chapters"]) == {"01-a", "02-b"}
        assert [r["claim"] for r in d["chapters"]["02-b"]["claims"]] == ["demo/02-b-sum"]
        assert d["chapters"]["02-b"]["claims"][0]["status"] == "passed"
        assert d["counts"]["passed"] == 2 and "commit" in d
    assert 'href="../claims-ledger.json"' in t["first"] and 'href="../claims-ledger.json"' in t["third"]


def test_cpu_shares_split_the_cpus_into_disjoint_contiguous_sets():
    """make book's jobs each get their own CPUs: the shares partition the set, contiguously, sizes differing
    by at most one; impossible splits give None; a job count below one is an error."""
    assert cpu_shares(2, {0, 1}) == [{0}, {1}]
    assert cpu_shares(2, set(range(8))) == [{0, 1, 2, 3}, {4, 5, 6, 7}]
    assert cpu_shares(3, {4, 5, 6, 7, 9}) == [{4, 5}, {6}, {7, 9}]
    assert cpu_shares(1, {2, 3}) == [{2, 3}]
    assert cpu_shares(3, {0, 1}) is None
    for cpus, jobs in ((set(range(13)), 5), ({1, 3, 8, 20}, 4), (set(range(64)), 7)):
        shares = cpu_shares(jobs, cpus)
        assert set().union(*shares) == cpus and sum(map(len, shares)) == len(cpus)
        assert max(map(len, shares)) - min(map(len, shares)) <= 1
    with pytest.raises(ValueError, match="jobs"):
        cpu_shares(0, {0, 1})


# ---------------------------------------------------------------------------------------------
# Determinism: nbval's re-execution writes papermill's ledger (conftest.py, ledger-matches-papermill)
# ---------------------------------------------------------------------------------------------

TINY_CHAPTER = """\
from ntkbook import claims
claims.start("01-tiny", scale="ci")
claims.condition("tiny/sum", 1 + 1 == 2, criterion="1 + 1 = 2", ref="book, arithmetic", label="tiny", value=0.1 + 0.2)
"""


def test_nbval_ledger_is_compared_byte_for_byte_with_papermills(tmp_path):
    """The root conftest.py follows each notebook nbval re-executes with ``ledger-matches-papermill``: it passes
    when the re-execution wrote exactly papermill's ledger and fails, showing the differing lines, when not."""
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    executed = tmp_path / "executed"
    (executed / "book").mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(TINY_CHAPTER)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, executed / "book" / "01-tiny.ipynb")
    env = {k: v for k, v in os.environ.items() if k != "NTKBOOK_LEDGER_DIR"}
    # "papermill's" ledger: the same code run once in a fresh process
    subprocess.run([sys.executable, "-c", TINY_CHAPTER], check=True, cwd=tmp_path,
                   env=env | {"NTKBOOK_LEDGER_DIR": str(executed / "ledger")})

    def nbval() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "-p", "no:cacheprovider", "-q",
                               "-rA", "executed/book/01-tiny.ipynb"], cwd=tmp_path, capture_output=True, text=True,
                              env=env | {"NTKBOOK_EXECUTED_DIR": str(executed)})

    same = nbval()
    assert same.returncode == 0, same.stdout + same.stderr
    assert "2 passed" in same.stdout and "ledger-matches-papermill" in same.stdout
    path = executed / "ledger" / "01-tiny.jsonl"
    path.write_text(path.read_text().replace('"value":0.3', '"value":0.300001'))
    changed = nbval()
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "the ledgers of two executions of 01-tiny at one scale differ" in changed.stdout
    assert '-{"claim":"tiny/sum"' in changed.stdout and '"value":0.300001' in changed.stdout
