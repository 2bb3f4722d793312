"""Reproductions: experiments run from the command line, cached piece by piece, resumable.

``python -m ntkbook reproduce NAME --scale {ci,book,paper} --out DIR`` writes ``DIR/NAME.json``
(every number behind the figure, the settings, seconds taken, JAX backend and devices) and
``DIR/NAME.png``.  A reproduction is a list of independent *pieces* (e.g. one (width, seed) pair);
each finished piece is written to ``DIR/.cache/NAME/<scale>-<settings digest>/`` with an atomic
rename, so an interrupted run resumes where it stopped.  A cache file that does not parse or whose
checksum does not match is recomputed, never trusted.

The chapters call the same experiment code (usually the piece function in a loop), so the book and
the command line cannot drift apart.

A reproduction registers itself with :func:`register`; the modules of the package ``ntkbook.reproductions``
are imported on first use.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from . import _validation as V
from . import scales
from .progress import progress
from .records import atomic_write_json, digest, file_mode, to_jsonable

Piece = dict[str, Any]


@dataclass(frozen=True)
class Reproduction:
    """One reproducible experiment.

    Attributes:
        name: command-line name (``"nonlinear-output"``).
        experiment: its key in :data:`ntkbook.scales.TABLE`.
        description: one line for ``python -m ntkbook list``.
        pieces: settings → list of independent work items (small JSON-able dicts).
        compute: (piece, settings) → JSON-able dict of results for that piece.
        assemble: (settings, pieces, results) → the keys of the output JSON specific to this
            reproduction; a ``"settings"`` entry is merged into the recorded settings (e.g. step
            sizes derived from the data).
        plot: (result, path) → writes the figure (PNG) for the assembled result, or None.
    """

    name: str
    experiment: str
    description: str
    pieces: Callable[[Mapping[str, Any]], list[Piece]]
    compute: Callable[[Piece, Mapping[str, Any]], dict[str, Any]]
    assemble: Callable[[Mapping[str, Any], list[Piece], list[dict[str, Any]]], dict[str, Any]]
    plot: Callable[[dict[str, Any], Path], None] | None = None


REGISTRY: dict[str, Reproduction] = {}


def register(reproduction: Reproduction) -> Reproduction:
    """Add a reproduction to the registry (at import of its module)."""
    if reproduction.experiment not in scales.TABLE:
        raise ValueError(f"reproduction {reproduction.name!r}: unknown experiment {reproduction.experiment!r}")
    REGISTRY[reproduction.name] = reproduction
    return reproduction


def _load_all() -> None:
    from . import reproductions

    for info in pkgutil.iter_modules(reproductions.__path__):
        importlib.import_module(f"{reproductions.__name__}.{info.name}")


def names() -> list[str]:
    _load_all()
    return sorted(REGISTRY)


def get(name: str) -> Reproduction:
    """The registered reproduction ``name`` (ValueError listing the valid names otherwise)."""
    _load_all()
    return REGISTRY[V.choice("name", name, sorted(REGISTRY))]


def save_figure(fig: Any, path: Path, title: str, **suptitle_kwargs: Any) -> None:
    """Title a reproduction's matplotlib figure, write it to ``path`` and close it."""
    import matplotlib.pyplot as plt

    fig.suptitle(title, **suptitle_kwargs)
    fig.savefig(path)
    plt.close(fig)


class PieceCache:
    """Finished pieces of one (reproduction, scale, settings), one checksummed JSON file each."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def path(self, piece: Piece) -> Path:
        return self.directory / f"{digest(piece)[:24]}.json"

    def load(self, piece: Piece) -> dict[str, Any] | None:
        """The cached result of ``piece``, or None if absent or corrupted (corrupted files are removed)."""
        path = self.path(piece)
        if not path.exists():
            return None
        try:
            record = json.loads(path.read_text())
            ok = record["piece"] == to_jsonable(piece) and record["sha256"] == digest(record["result"])
        except (OSError, ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            warnings.warn(f"corrupted cache file {path} is ignored and its piece recomputed", stacklevel=2)
            path.unlink(missing_ok=True)
            return None
        return record["result"]

    def save(self, piece: Piece, result: dict[str, Any]) -> None:
        result = to_jsonable(result)
        atomic_write_json(self.path(piece), {"piece": piece, "sha256": digest(result), "result": result})


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """JAX backend and devices (recorded in every output)."""
    return {"backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()]}


def run(name: str, scale: str | None = None, out: str | os.PathLike | None = None, *, resume: bool = True,
        plot: bool = True) -> dict[str, Any]:
    """Run reproduction ``name`` at ``scale`` and return its result dict.

    With ``out`` the result is written to ``out/NAME.json`` (and ``out/NAME.png``) and every finished
    piece is cached under ``out/.cache``; ``resume=False`` ignores (and overwrites) the cache.
    Without ``out`` nothing is written.
    """
    reproduction = get(name)
    scale = scales.resolve(scale)
    settings = scales.get(reproduction.experiment, scale)
    start = time.perf_counter()
    items = reproduction.pieces(settings)
    cache = None
    if out is not None:
        out = Path(out)
        cache = PieceCache(out / ".cache" / name / f"{scale}-{digest(settings.as_dict())[:12]}")
    results, cached, compute_seconds = [], 0, 0.0
    for item in progress(items, desc=name, total=len(items)):
        result = cache.load(item) if (cache is not None and resume) else None
        if result is None:
            t0 = time.perf_counter()
            result = to_jsonable(reproduction.compute(item, settings))
            result["_seconds"] = time.perf_counter() - t0
            if cache is not None:
                cache.save(item, result)
        else:
            cached += 1
        compute_seconds += float(result.get("_seconds", 0.0))
        results.append(result)
    body = reproduction.assemble(settings, items, results)
    recorded = settings.as_dict() | dict(body.pop("settings", {}))
    output = {"name": name, "scale": scale, "settings": recorded,
              "seconds": time.perf_counter() - start, "compute_seconds": compute_seconds,
              "pieces": len(items), "cached_pieces": cached, **machine(), **body}
    output = to_jsonable(output)
    if out is not None:
        atomic_write_json(out / f"{name}.json", output)
        if plot and reproduction.plot is not None:
            _plot_atomically(reproduction, output, out / f"{name}.png")
    return output


def _plot_atomically(reproduction: Reproduction, result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg", force=False)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".png")
    os.close(fd)
    os.chmod(tmp, file_mode())
    try:
        reproduction.plot(result, Path(tmp))
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
