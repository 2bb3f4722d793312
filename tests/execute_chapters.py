"""Execute every chapter once at ``ci`` scale with papermill, into a copy of the book.

``make test`` runs this before pytest (``python tests/execute_chapters.py _build/test-executed``); the
tests then use the executed copies three ways: ``tests/test_book.py`` checks each chapter's claims
ledger and renders the book from these outputs (execution off), and nbval re-executes executed
notebooks (``pytest _build/test-executed/book/<stem>.ipynb --nbval-lax``: one chapter in ``make test``,
every chapter in ``make test-determinism``) comparing the outputs of the cells tagged
``nbval-check-output`` (the check cells) and the claims ledger with what papermill stored.  Run on its own,
``tests/test_book.py`` calls :func:`execute_all` itself into a temporary directory.

Layout of ``OUT``::

    OUT/_toc.yml, OUT/book/...        a copy of the book, chapters executed in place
    OUT/ledger/<stem>.jsonl           each chapter's claims ledger (OUT/ledger is $NTKBOOK_LEDGER_DIR of
                                      every run, and of the book built from them)
    OUT/execution.json                {stem: {"seconds": wall time, "error": text or null}}

Chapters run ``--jobs`` at a time (each in its own kernel process), longest first according to the
committed times of a fresh-clone ``make test`` (``book/_data/chapter_seconds.json``, key ``ci``; the benchmark page's chapter
times are warm-cache ones, which order the chapters differently), so that the last one to finish is short.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
from execute_stale_chapters import expected_seconds  # the one reader of the order hints

ROOT = Path(__file__).resolve().parents[1]


def chapter_stems() -> list[str]:
    return sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))


def copy_book(out: Path) -> Path:
    """Copy ``_toc.yml``, ``book/`` (without build products) and the committed benchmark results (which the
    Performance page includes, figure and all, as ``make book`` does) into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "_toc.yml", out / "_toc.yml")
    for part in ("book", "benchmarks/results"):
        if (out / part).exists():
            shutil.rmtree(out / part)
    shutil.copytree(ROOT / "book", out / "book",
                    ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints", "_generated"))
    shutil.copytree(ROOT / "benchmarks" / "results", out / "benchmarks" / "results",
                    ignore=shutil.ignore_patterns("*.tmp"))
    return out


def _expected_seconds() -> dict[str, float]:
    return expected_seconds("ci")


def execute_one(path: Path, ledger: Path) -> dict:
    """Run ``path`` in place at ci scale (papermill injects ``scale = "ci"``) with its own ledger.

    Returns ``{"seconds": wall time, "error": None or the end of papermill's error output}``.
    """
    env = os.environ | {"NTKBOOK_SCALE": "ci", "NTKBOOK_PROGRESS": "0", "NTKBOOK_LEDGER_DIR": str(ledger)}
    cmd = [sys.executable, "-m", "papermill", str(path), str(path), "-p", "scale", "ci", "--cwd",
           str(path.parent), "-k", "python3", "--no-progress-bar", "--log-level", "ERROR"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        return {"seconds": seconds, "error": (proc.stdout + proc.stderr)[-4000:]}
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # papermill's injected parameters are an implementation detail of the test
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
    nbformat.write(nb, path)
    return {"seconds": seconds, "error": None}


def execute_all(out: Path, *, jobs: int = 2, stems: list[str] | None = None, verbose: bool = False) -> dict:
    """Copy the book into ``out`` and execute the chapters there; write and return ``execution.json``."""
    out = copy_book(Path(out).resolve())
    stems = chapter_stems() if stems is None else stems
    expected = _expected_seconds()
    order = sorted(stems, key=lambda s: -expected.get(s, 0.0))

    def run(stem: str) -> tuple[str, dict]:
        result = execute_one(out / "book" / f"{stem}.ipynb", out / "ledger")
        if verbose:
            status = "ok" if result["error"] is None else "FAILED"
            print(f"  {stem:45s} {result['seconds']:6.1f} s  {status}", flush=True)
        return stem, result

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = dict(pool.map(run, order))
    results = {stem: results[stem] for stem in sorted(results)}
    (out / "execution.json").write_text(json.dumps(results, indent=1) + "\n")
    if verbose:
        total = sum(r["seconds"] for r in results.values())
        print(f"executed {len(results)} chapters in {time.perf_counter() - start:.0f} s wall "
              f"({total:.0f} s summed over chapters, {jobs} at a time)", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory for the executed copy of the book (replaced)")
    parser.add_argument("--jobs", type=int, default=2, help="chapters executed at the same time")
    parser.add_argument("stems", nargs="*", help="chapters to execute (default: all)")
    args = parser.parse_intermixed_args(argv)
    if args.out.exists():
        shutil.rmtree(args.out)
    print(f"executing the chapters at ci scale with papermill into {args.out}", flush=True)
    execute_all(args.out, jobs=args.jobs, stems=args.stems or None, verbose=True)
    return 0  # failures are reported by tests/test_book.py::test_notebook_runs_at_ci_scale


if __name__ == "__main__":
    sys.exit(main())
