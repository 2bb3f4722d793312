"""Execute the chapters that ``make book`` would execute, several at a time, into Jupyter Book's cache.

``make book`` runs this before ``jupyter-book build``.  Jupyter Book (myst-nb in ``cache`` mode)
executes a chapter that is not in its execution cache while it reads the page, one chapter after
another, and on this 2-core machine a chapter's kernel mostly keeps one core busy.  This script finds
the same stale chapters, executes them ``--jobs`` at a time (longest first), and stores each one in the
cache exactly as myst-nb would (``jupyter_cache``'s ``single_nb_execution`` with the build's timeout,
``allow_errors`` off, the chapter's directory as working directory; then ``cache_notebook_bundle`` with
the run time).  The build that follows finds every chapter cached and executes nothing.

* **The cache and ledger directory** are the build's (:func:`execution_cache.prepare_cache`): the scale
  from ``$NTKBOOK_SCALE``, the digest of the package source and library versions; each kernel writes its
  claims ledger there (``$NTKBOOK_LEDGER_DIR``), as in the build.
* **Which chapters**: the notebooks of ``_toc.yml`` (``book/*.ipynb``) that jupyter-cache cannot match,
  by the same hash of code cells and kernelspec that myst-nb matches them with.
* **Resuming**: each chapter is stored as soon as it finishes, so an interrupted ``make book`` starts
  again with the chapters that were not finished.
* **A failing chapter** (a cell raised, e.g. a claim failed) is not stored: its traceback is printed and
  the script exits with status 1 after the other chapters finished, so ``make book`` stops with the
  error, as the build itself would.
* **Order**: longest first by ``book/_data/chapter_seconds.json`` at the build's scale.
* **One share of the CPUs per job** (Linux): the CPUs this process may use are split into ``--jobs``
  disjoint sets, and each worker — with the kernels it starts — runs on its own set
  (:func:`cpu_shares`).  Unpinned, the thread pools of two kernels (XLA's Eigen pool, OpenBLAS) spread
  over both cores and wait on each other: measured on the 2-core machine (2026-11-28, chapters 2 and 9
  at book scale, side by side, cold JAX cache), 287 s and 262 s unpinned against 108 s and 245 s pinned,
  552 against 352 CPU-s.  ``--no-pin`` leaves the scheduler alone; with fewer CPUs than jobs nothing
  is pinned.
* **On a GPU** (:func:`gpu_present`: a CUDA or ROCm plugin of JAX is installed and the machine has a GPU
  device; no JAX import): nothing is pinned (the work is on the GPU, and a kernel's host threads should
  not be confined to one core), and with more than one job each kernel gets
  ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` and ``XLA_PYTHON_CLIENT_MEM_FRACTION`` = its share of 90 % of the
  GPU's memory (:func:`job_environment`): JAX's default preallocates 75 % of the GPU in each process, so the
  second chapter would start out of memory.  Values already set in the environment are kept.

Run times stored in the cache (shown in each chapter's run-time box and on the Execution statistics
page) are wall times with ``--jobs`` chapters sharing the machine.

Usage (from the repository root): ``python book/_ext/execute_stale_chapters.py --jobs 2``.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import itertools
import json
import multiprocessing
import os
import queue
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import nbformat
import yaml

from execution_cache import prepare_cache  # a sibling module: run as a script, its folder is on sys.path

ROOT = Path(__file__).resolve().parents[2]
ORDER_HINT = ROOT / "book" / "_data" / "chapter_seconds.json"


def toc_notebooks(root: Path = ROOT) -> list[Path]:
    """The ``.ipynb`` chapters listed in ``root/_toc.yml``, in the order of the table of contents."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    return [root / f"{f}.ipynb" for f in files if (root / f"{f}.ipynb").exists()]


def expected_seconds(scale: str) -> dict[str, float]:
    """The committed chapter times at ``scale`` (only their order matters), or ``{}``."""
    if not ORDER_HINT.exists():
        return {}
    return {stem: float(s) for stem, s in json.loads(ORDER_HINT.read_text()).get(scale, {}).items()}


def cpu_shares(jobs: int, cpus: set[int] | None = None) -> list[set[int]] | None:
    """Split ``cpus`` (default: the CPUs this process may run on) into ``jobs`` disjoint, contiguous sets
    of nearly equal size; ``None`` where that is impossible (fewer CPUs than jobs) or the platform cannot
    pin a process (no ``os.sched_setaffinity``, e.g. macOS).

    Raises:
        ValueError: if ``jobs`` < 1.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if not hasattr(os, "sched_setaffinity"):
        return None
    ordered = sorted(os.sched_getaffinity(0) if cpus is None else cpus)
    if len(ordered) < jobs:
        return None
    bounds = [round(i * len(ordered) / jobs) for i in range(jobs + 1)]
    return [set(ordered[a:b]) for a, b in itertools.pairwise(bounds)]


GPU_PLUGINS = ("jax_cuda12_plugin", "jax_cuda13_plugin", "jax_rocm6_plugin", "jax_rocm7_plugin")


def gpu_present(environ: dict[str, str] | None = None) -> bool:
    """Whether the chapters' JAX will run on a GPU, decided without importing JAX (which takes seconds):
    ``$NTKBOOK_GPU`` (``1``/``0``) if set; else False when ``$JAX_PLATFORMS`` names no GPU platform; else
    whether one of JAX's GPU plugins is installed and the machine shows a GPU (``nvidia-smi`` or
    ``/dev/nvidia*``, ``/dev/kfd`` for ROCm).  The CPU-only toolchain of ``requirements.txt`` has no plugin.

    Raises:
        ValueError: if ``$NTKBOOK_GPU`` is set to something other than ``0`` or ``1``.
    """
    environ = os.environ if environ is None else environ
    forced = environ.get("NTKBOOK_GPU", "").strip()
    if forced:
        if forced not in ("0", "1"):
            raise ValueError(f"NTKBOOK_GPU must be 0 or 1, got {forced!r}")
        return forced == "1"
    platforms = environ.get("JAX_PLATFORMS", "").strip().lower()
    if platforms and not any(p in platforms for p in ("cuda", "gpu", "rocm")):
        return False
    if not any(importlib.util.find_spec(name) is not None for name in GPU_PLUGINS):
        return False
    return bool(shutil.which("nvidia-smi") or glob.glob("/dev/nvidia[0-9]*") or os.path.exists("/dev/kfd"))


def job_environment(jobs: int, gpu: bool) -> tuple[dict[str, str], bool]:
    """What ``jobs`` parallel chapter jobs need: the environment variables to add for their kernels and
    whether to pin each job to its own CPUs.  On the CPU: nothing added, pinned.  On a GPU: not pinned, and
    with more than one job JAX's allocator preallocates nothing and each kernel may use its share of 90 % of
    the GPU's memory (``XLA_PYTHON_CLIENT_MEM_FRACTION``, two decimals, rounded down).

    Raises:
        ValueError: if ``jobs`` < 1.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if not gpu:
        return {}, True
    if jobs == 1:
        return {}, False
    return {"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
            "XLA_PYTHON_CLIENT_MEM_FRACTION": f"{int(90 / jobs) / 100:.2f}"}, False


def _pin_worker(shares: Any) -> None:
    """Pool initializer: take one CPU set from the queue ``shares`` and run this worker (and every kernel it
    starts, which inherits the affinity) on it."""
    try:
        cpus = shares.get(timeout=30)
    except queue.Empty:  # a worker beyond the --jobs first ones (the pool replaced one): run unpinned
        return
    os.sched_setaffinity(0, cpus)


def _execute(path: str, timeout: int | None) -> tuple[str, dict[str, Any] | None, float, str | None]:
    """Worker: execute the notebook at ``path`` as myst-nb does; return it (as JSON), its time, its error."""
    from jupyter_cache.executors.utils import single_nb_execution

    nb = nbformat.read(path, as_version=4)
    result = single_nb_execution(nb, cwd=str(Path(path).parent), timeout=timeout, allow_errors=False,
                                 meta_override=True)
    if result.err is not None:
        return path, None, result.time, result.exc_string or repr(result.err)
    return path, nbformat.writes(result.nb), result.time, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="chapters executed at the same time (≥ 1)")
    parser.add_argument("--no-pin", action="store_true", help="do not give each job its own share of the CPUs")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "_build", help="Jupyter Book's build folder")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")

    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    execute = config.get("execute", {})
    if execute.get("execute_notebooks", "auto") != "cache":
        print("execute_notebooks is not 'cache' in _config.yml: nothing to do", flush=True)
        return 0
    timeout = execute.get("timeout")
    scale = os.environ.get("NTKBOOK_SCALE", "book")
    path = prepare_cache(args.build_dir.resolve(), scale)
    os.environ["NTKBOOK_LEDGER_DIR"] = str(path / "ledger")  # inherited by the kernels
    cache = get_cache(str(path))

    stale = []
    for nb_path in toc_notebooks():
        try:
            cache.match_cache_notebook(nbformat.read(nb_path, as_version=4))
        except KeyError:
            stale.append(nb_path)
    if not stale:
        print(f"execution cache ({scale}): every chapter is cached", flush=True)
        return 0
    hint = expected_seconds(scale)
    stale.sort(key=lambda p: -hint.get(p.stem, 0.0))
    print(f"execution cache ({scale}): executing {len(stale)} chapter(s), {args.jobs} at a time, into {path}",
          flush=True)

    failed = []
    start = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    gpu = gpu_present()
    additions, pin = job_environment(args.jobs, gpu)
    for key, value in additions.items():
        os.environ.setdefault(key, value)  # inherited by the workers and their kernels
    if gpu:
        print("  on a GPU: jobs not pinned to CPUs"
              + "".join(f", {k}={os.environ[k]}" for k in additions), flush=True)
    shares = None if args.no_pin or not pin else cpu_shares(args.jobs)
    pinning = {}
    if shares is not None:
        free = context.Queue()
        for share in shares:
            free.put(share)
        pinning = {"initializer": _pin_worker, "initargs": (free,)}
        print("  each job on its own CPUs: " + ", ".join(str(sorted(s)) for s in shares), flush=True)
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=context, **pinning) as pool:
        futures = [pool.submit(_execute, str(p), timeout) for p in stale]
        for future in as_completed(futures):
            nb_path, text, seconds, error = future.result()
            stem = Path(nb_path).stem
            if error is not None:
                failed.append(stem)
                print(f"  {stem:45s} {seconds:7.1f} s  FAILED\n{error}", flush=True)
                continue
            record = cache.add_nb_to_project(nb_path)
            cache.cache_notebook_bundle(
                CacheBundleIn(nbformat.reads(text, as_version=4), record.uri, data={"execution_seconds": seconds}),
                check_validity=False, overwrite=True)
            print(f"  {stem:45s} {seconds:7.1f} s  cached", flush=True)
    print(f"executed {len(stale)} chapter(s) in {time.perf_counter() - start:.0f} s wall"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
