"""Sphinx extension: ``make book`` re-executes only the chapters whose code changed, and the claims
ledger stays complete.

With ``execute_notebooks: cache`` (``_config.yml``) myst-nb keeps every executed chapter in a
jupyter-cache keyed by the chapter's code cells (source and cell metadata); an unchanged chapter is
rendered from its cached outputs instead of being executed.  Two things the code cells do not show
decide the numbers too, so they key the cache directory itself:

* the scale (``$NTKBOOK_SCALE``, read by the ``parameters`` cell): a ``ci`` build never shows cached
  ``book`` outputs, and the other way round;
* the code that computes: the source of the ``ntkbook`` package that is imported, the versions of
  the numerical libraries, XLA's compile options (``$XLA_FLAGS``, set by ``make book``) and the number of
  BLAS threads (``$OPENBLAS_NUM_THREADS``, set by the Makefile) — any change there re-executes every
  chapter.

The cache of one build lives in ``_build/.jupyter_cache/<scale>-<digest>/``; older digests of the same
scale are removed.  Each chapter's claims ledger (``ntkbook.claims``) is written next to its cached
outputs, in ``<that directory>/ledger/`` (``$NTKBOOK_LEDGER_DIR`` of the kernels and of the Claims
ledger page): a chapter served from the cache keeps the ledger of the execution that produced the
outputs shown, a re-executed chapter rewrites its own file, so the ledger page always lists every
chapter with the numbers the pages show.

``make book`` fills this cache before the build, executing the chapters that it lacks several at a
time (``execute_stale_chapters.py``, with :func:`prepare_cache`); the build then reads every chapter
from it.

Only active in ``cache`` mode: ``make test`` (papermill, then a build with execution ``off``) and
``execute_notebooks: force`` never use it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from importlib import metadata
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
LIBRARIES = ("jax", "jaxlib", "numpy", "scipy", "sympy", "pandas", "matplotlib")


def code_digest() -> str:
    """A digest of the imported ``ntkbook`` package's source, the numerical libraries' versions, ``$XLA_FLAGS`` and
    ``$OPENBLAS_NUM_THREADS``."""
    import ntkbook

    package = Path(ntkbook.__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        h.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    for lib in LIBRARIES:
        try:
            h.update(f"{lib}=={metadata.version(lib)}\n".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{lib} missing\n".encode())
    h.update(f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')}\n".encode())  # compile options change the rounding
    # so can the number of BLAS threads (how a product is split): make book with OpenBLAS's default threads
    # and unpinned jobs, then with one thread and pinned jobs: 5 of 12 ledgers differ in the 5th-6th digit
    # of some measured values, every status the same (2026-11-28)
    h.update(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '')}\n".encode())
    return h.hexdigest()[:16]


def cache_dir(build_dir: Path, scale: str) -> Path:
    return build_dir / ".jupyter_cache" / f"{scale}-{code_digest()}"


def prepare_cache(build_dir: Path, scale: str) -> Path:
    """The execution cache of a build at ``scale`` in ``build_dir``, with its ``ledger/`` folder created;
    caches of the same scale with another digest are removed.  Used by the build and by
    ``execute_stale_chapters.py``, which fills the cache before the build."""
    path = cache_dir(build_dir, scale)
    for old in path.parent.glob(f"{scale}-*"):
        if old != path and old.is_dir():
            LOGGER.info(f"execution cache: removing {old.name} (other package source or library versions)")
            shutil.rmtree(old, ignore_errors=True)
    (path / "ledger").mkdir(parents=True, exist_ok=True)
    return path


def _config_inited(app: Sphinx, config: Any) -> None:
    if config.nb_execution_mode != "cache":
        return
    scale = os.environ.get("NTKBOOK_SCALE", "book")
    path = prepare_cache(Path(app.outdir).resolve().parent, scale)
    config.nb_execution_cache_path = str(path)
    config.ntkbook_ledger_dir = str(path / "ledger")
    os.environ["NTKBOOK_LEDGER_DIR"] = str(path / "ledger")  # inherited by the kernels that execute
    LOGGER.info(f"execution cache and claims ledger for scale {scale}: {path}")


def setup(app: Sphinx) -> dict[str, Any]:
    # after Jupyter Book has turned _config.yml into Sphinx configuration, before myst-nb reads it
    app.connect("config-inited", _config_inited, priority=900)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
