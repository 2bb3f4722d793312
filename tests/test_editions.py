"""Editions for a course (issue 35), the cheap parts: the solution stripper of the student edition and the
notebook bundle (book/_ext/editions.py), the citation metadata, and the environment of make book's parallel
chapter jobs on a GPU (book/_ext/execute_stale_chapters.py).  The editions built from a tiny book are tested
in tests/test_book_execution.py, which builds that book once."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
from editions import strip_notebook, strip_solutions  # scripts in book/_ext, as in tests/execute_chapters.py
from execute_stale_chapters import gpu_present, job_environment

ROOT = Path(__file__).resolve().parents[1]


def test_strip_solutions_removes_every_fenced_solution_block_and_nothing_else():
    """Back-tick, tilde and colon fences of any length, nested code fences inside a longer fence, the blank
    line a removed block leaves doubled; exercises, other directives and prose stay."""
    text = ("Intro.\n\n```{exercise}\n:label: ex-a\n\nDo it.\n```\n\n```{solution} ex-a\n:class: dropdown\n\n"
            "SECRET one.\n```\n\nMiddle.\n\n````{solution} ex-a\n```python\nx = 1\n```\nSECRET two.\n````\n\n"
            ":::{solution} ex-a\nSECRET three.\n:::\n\n~~~{solution} ex-a\nSECRET four.\n~~~~\nEnd.\n")
    out = strip_solutions(text)
    assert "SECRET" not in out and "{solution}" not in out
    assert out == "Intro.\n\n```{exercise}\n:label: ex-a\n\nDo it.\n```\n\nMiddle.\n\nEnd.\n"
    assert strip_solutions("no solutions here\n") == "no solutions here\n"
    with pytest.raises(ValueError, match="never closed"):
        strip_solutions("```{solution} ex-a\nopen forever\n")
    with pytest.raises(ValueError, match="gated solutions"):
        strip_solutions("```{solution-start} ex-a\n```\ntext\n```{solution-end}\n```\n")


def test_strip_notebook_keeps_code_cells_hence_the_execution_cache_key():
    """Every chapter of the book stripped: no solution directive left in any cell, every exercise kept, and the
    hash jupyter-cache matches executed chapters by (code cells and kernelspec) unchanged."""
    from jupyter_cache.cache.main import JupyterCacheBase

    hashed = JupyterCacheBase.create_hashed_notebook
    for path in sorted((ROOT / "book").glob("[0-9]*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        stripped = strip_notebook(nb)
        text = nbformat.writes(stripped)
        assert "{solution" not in text, path.name
        assert text.count("{exercise}") == nbformat.writes(nb).count("{exercise}"), path.name
        assert hashed(None, nb)[1] == hashed(None, stripped)[1], path.name
        nbformat.validate(stripped)


def test_citation_file_is_cff_1_2_with_the_package_version():
    """CITATION.cff parses as YAML with the keys CFF 1.2.0 requires (and the ones a citation needs); its
    version is pyproject's and the package's."""
    import ntkbook

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    for key in ("cff-version", "message", "title", "version", "date-released", "authors"):
        assert cff.get(key), key
    assert cff["cff-version"] == "1.2.0"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(cff["date-released"]))
    assert all("name" in a or "family-names" in a for a in cff["authors"])
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert str(cff["version"]) == version == ntkbook.__version__
    assert f"## {version}" in (ROOT / "CHANGELOG.md").read_text()


def test_job_environment_on_cpu_and_gpu():
    """On the CPU the jobs are pinned and the environment is left alone; on a GPU nothing is pinned and, with
    several jobs, JAX preallocates nothing and each kernel may use its share of 90 % of the GPU's memory."""
    assert job_environment(2, gpu=False) == ({}, True)
    assert job_environment(1, gpu=True) == ({}, False)
    assert job_environment(2, gpu=True) == ({"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                                             "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.45"}, False)
    env, pin = job_environment(3, gpu=True)
    assert env["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.30" and not pin
    with pytest.raises(ValueError, match="jobs"):
        job_environment(0, gpu=False)


def test_gpu_present_is_decided_without_jax():
    """NTKBOOK_GPU forces the answer; JAX_PLATFORMS=cpu means no GPU; a bad NTKBOOK_GPU is an error; and this
    CPU toolchain (no JAX GPU plugin) has none."""
    assert gpu_present({"NTKBOOK_GPU": "1"}) is True
    assert gpu_present({"NTKBOOK_GPU": "0"}) is False
    assert gpu_present({"JAX_PLATFORMS": "cpu"}) is False
    with pytest.raises(ValueError, match="NTKBOOK_GPU"):
        gpu_present({"NTKBOOK_GPU": "yes"})
    if not any(ROOT.glob(".venv/lib/python*/site-packages/jax_cuda*_plugin")):
        assert gpu_present({}) is False


def test_gpu_present_imports_no_jax():
    """The check stays cheap on the CPU path: it does not import JAX."""
    import subprocess

    code = ("import sys; sys.path.insert(0, 'book/_ext'); from execute_stale_chapters import gpu_present; "
            "gpu_present(); print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_make_targets_use_the_editions_script(tmp_path):
    """make book-student builds the stripped copy that editions.py makes (the tiny book's tests run the same
    command) and make handout writes the bundle with it; the copy refuses a folder that holds a book."""
    from editions import student_copy

    makefile = (ROOT / "Makefile").read_text()
    student = makefile[makefile.index("\nbook-student: $(STAMP)"):]
    assert "book/_ext/editions.py student-copy $(STUDENT)" in student.split("\n\n")[0]
    handout = makefile[makefile.index("\nhandout: $(STAMP)"):]
    assert "book/_ext/editions.py handout _build/handout" in handout.split("\n\n")[0]
    (tmp_path / "book").mkdir()
    with pytest.raises(ValueError, match="empty folder"):
        student_copy(ROOT, tmp_path)


def test_jupyterlab_myst_is_installed_as_a_lab_extension():
    """The pinned environment has the MyST renderer for JupyterLab (requirements.txt): its Python package and
    its prebuilt lab extension, which JupyterLab loads from ``<prefix>/share/jupyter/labextensions``."""
    import importlib.util

    pins = (ROOT / "requirements.txt").read_text().splitlines()
    assert any(re.fullmatch(r"jupyterlab-myst==[\d.]+", line) for line in pins)
    assert importlib.util.find_spec("jupyterlab_myst") is not None
    assert (Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "jupyterlab-myst" / "package.json").exists()


@pytest.mark.skipif(not __import__("os").environ.get("NTKBOOK_LAB_TEST"),
                    reason="opens JupyterLab in Chromium (about 20 s): set NTKBOOK_LAB_TEST=1")
def test_jupyterlab_renders_the_chapters_myst(tmp_path):
    """A Markdown cell with a {prf:theorem}, an {exercise} and maths, opened in JupyterLab (the pinned one,
    headless Chromium): the directives are rendered, not shown as raw MyST.  Measured 2026-12-07 with
    JupyterLab 4.6.6 and jupyterlab-myst 2.7.0 (whose labextension list shows an @jupyter/ydoc 3-vs-4
    warning): 'Theorem 1 (Constant kernel)' and 'Exercise 1' rendered."""
    import os
    import shutil
    import socket
    import subprocess
    import time

    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("needs Debian's chromium (make test installs it)")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "```{prf:theorem} Constant kernel\n:label: thm-x\n\nThe kernel is $K = 1$.\n```\n\n"
        "```{exercise}\n:label: ex-x\n\nDo it.\n```\n")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "demo.ipynb")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    lab = subprocess.Popen([str(Path(sys.executable).with_name("jupyter")), "lab", "--no-browser", f"--port={port}",
                            "--IdentityProvider.token=t", f"--ServerApp.root_dir={tmp_path}", "--allow-root"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(f"http://127.0.0.1:{port}/lab/tree/demo.ipynb?token=t")
            page.wait_for_selector("text=Exercise 1", timeout=90_000)
            text = page.inner_text(".jp-Notebook")
            browser.close()
    finally:
        lab.terminate()
        try:
            lab.wait(timeout=10)
        except subprocess.TimeoutExpired:  # the server can take long to stop its extensions: end it
            lab.kill()
            lab.wait()
    assert "Theorem 1 (Constant kernel)" in text and "Exercise 1" in text
    assert "{prf:theorem}" not in text and "{exercise}" not in text
