"""How the book is executed, on tiny books: ``make book`` re-executes only the chapters whose code changed
(Jupyter Book's execution cache) and keeps every chapter's claims in the ledger; nbval's re-execution in
``make test`` is followed by a byte-for-byte comparison of its claims ledger with papermill's (the root
``conftest.py``).  In its own file so that pytest-xdist (``--dist loadfile``) runs it beside the real
book's pages instead of after them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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
    ]
    return nb


def test_cached_rebuild_executes_only_the_edited_chapter_and_keeps_the_ledger(tmp_path):
    """As make book: the chapters are executed into the cache before the first build (two at a time,
    book/_ext/execute_stale_chapters.py), so that build executes none; a second build, after one chapter's
    code changed, executes that chapter only; and the Claims ledger page lists the claims of both chapters
    after each build.  As make book-student: a copy built in another folder with the book's execution cache
    executes no chapter."""
    book = tmp_path / "tiny"
    (book / "book").mkdir(parents=True)
    shutil.copytree(ROOT / "book" / "_ext", book / "book" / "_ext")
    shutil.copy(ROOT / "book" / "references.bib", book / "book" / "references.bib")
    for name in ("_static", "_data"):
        if (ROOT / "book" / name).exists():
            shutil.copytree(ROOT / "book" / name, book / "book" / name)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "cache", "make book must use the execution cache"
    (book / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    toc = {"format": "jb-book", "root": "book/intro", "parts": [{"caption": "Tiny", "chapters": [
        {"file": "book/01-a"}, {"file": "book/02-b"}, {"file": "book/claims-ledger"}]}]}
    (book / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    (book / "book" / "intro.md").write_text("# Tiny book\n")
    (book / "book" / "claims-ledger.md").write_text("# Claims ledger\n\n```{claims-ledger}\n```\n")
    nbformat.write(_tiny_chapter("01-a", 1), book / "book" / "01-a.ipynb")
    nbformat.write(_tiny_chapter("02-b", 2), book / "book" / "02-b.ipynb")
    env = {k: v for k, v in os.environ.items() if k != "NTKBOOK_LEDGER_DIR"} | {"NTKBOOK_SCALE": "ci"}
    runs = book / "book" / "runs.txt"

    def build_cached(root: Path = book) -> str:
        proc = subprocess.run([str(JUPYTER_BOOK), "build", str(root), "--builder", "html"],
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
        return (root / "_build" / "html" / "book" / "claims-ledger.html").read_text()

    pre = subprocess.run([sys.executable, str(book / "book" / "_ext" / "execute_stale_chapters.py"), "--jobs", "2"],
                         capture_output=True, text=True, env=env)
    assert pre.returncode == 0, (pre.stdout + pre.stderr)[-4000:]
    assert "executing 2 chapter(s), 2 at a time" in pre.stdout
    assert sorted(runs.read_text().split()) == ["01-a", "02-b"]
    shares = cpu_shares(2)
    if shares is not None:  # each kernel ran on one job's share of the CPUs, not on all of them
        ran_on = [set(map(int, line.split())) for line in (book / "book" / "cpus.txt").read_text().splitlines()]
        assert len(ran_on) == 2 and all(cpus in shares for cpus in ran_on), (ran_on, shares)
        assert "each job on its own CPUs" in pre.stdout
    first = build_cached()
    assert sorted(runs.read_text().split()) == ["01-a", "02-b"], "the build executed a pre-executed chapter again"
    assert "demo/01-a-sum" in first and "demo/02-b-sum" in first
    assert 'href="01-a.html#demo-01-a"' in first and 'href="02-b.html#demo-02-b"' in first  # linked to statements
    runs.unlink()

    nbformat.write(_tiny_chapter("01-a", 5), book / "book" / "01-a.ipynb")  # edit one chapter's code
    shutil.rmtree(book / "_build" / "html")
    second = build_cached()
    assert runs.read_text().split() == ["01-a"], "only the edited chapter is executed again"
    assert "demo/01-a-sum" in second and "demo/02-b-sum" in second, "the ledger lost the cached chapter"
    caches = list((book / "_build" / ".jupyter_cache").iterdir())
    assert [c.name.split("-")[0] for c in caches] == ["ci"] and (caches[0] / "ledger" / "02-b.jsonl").exists()
    runs.unlink()

    # as make book-student: a copy of the book with hide_solutions, in another folder, whose _build/.jupyter_cache
    # is the book's; it executes nothing and its ledger page shows the book's claims
    student = tmp_path / "student"
    shutil.copytree(book / "book", student / "book")
    shutil.copy(book / "_toc.yml", student / "_toc.yml")
    config["sphinx"]["config"]["hide_solutions"] = True
    (student / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    (student / "_build").mkdir()
    (student / "_build" / ".jupyter_cache").symlink_to(book / "_build" / ".jupyter_cache")
    third = build_cached(student)
    assert not (student / "book" / "runs.txt").exists(), "the student edition executed a chapter the book had cached"
    assert "demo/01-a-sum" in third and "demo/02-b-sum" in third
    assert [c.name for c in (book / "_build" / ".jupyter_cache").iterdir()] == [caches[0].name]


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
