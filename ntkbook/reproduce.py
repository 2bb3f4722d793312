"""Reproductions: the papers' figures from the command line, through the one sweep engine.

``python -m ntkbook reproduce NAME --scale {ci,book,paper} --out DIR [--shard i/n]`` writes
``DIR/NAME.json`` (every number behind the figure — the tidy table of the sweep —, the settings, seconds
taken, JAX version, backend and devices) and ``DIR/NAME.png``.  A reproduction is a :class:`~ntkbook.sweep.Sweep`
plus the one function that draws its figure from the sweep's table; the chapter that shows the figure
calls the same two (``nb.sweep.run`` and the figure function), so the book and the command line cannot
drift apart.  Finished pieces are cached under ``DIR/.cache`` (atomic writes, checksums), so an
interrupted run resumes where it stopped; ``--shard i/n`` computes one share of the pieces into the
shared cache (a Slurm array index works directly), and a last call without ``--shard`` merges and draws.

Older reproductions registered with ``pieces``/``compute``/``assemble``/``plot`` still run through the
legacy path below until their chapters are ported to sweeps; it shares the piece cache and shards the same
way (piece index ≡ i mod n).

A reproduction registers itself with :func:`register`; the modules of the package
``ntkbook.reproductions`` are imported on first use.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from . import _validation as V
from . import scales
from . import sweep as sweeps
from .progress import progress
from .records import atomic_write_json, digest, file_mode, to_jsonable

Piece = dict[str, Any]


@dataclass(frozen=True)
class Reproduction:
    """One reproducible figure.

    Attributes:
        name: command-line name (``"nonlinear-output"``).
        experiment: its key in :data:`ntkbook.scales.TABLE`.
        description: one line for ``python -m ntkbook list``.
        sweep: the :class:`~ntkbook.sweep.Sweep` that computes every number of the figure.
        figure: (table, settings) → a matplotlib figure: the one function that draws this figure,
            also called by the chapter.
        summary: (table, settings) → extra JSON-able numbers (e.g. fitted rates), or None.
        pieces: legacy form (no sweep), settings → work items.  The legacy fields are removed once
            every reproduction uses a sweep.
        compute: legacy form, (item, settings) → result dict.
        assemble: legacy form, (settings, items, results) → output keys.
        plot: legacy form, (result, path) → PNG.
    """

    name: str
    experiment: str
    description: str
    sweep: sweeps.Sweep | None = None
    figure: Callable[..., Any] | None = None
    summary: Callable[..., Mapping[str, Any]] | None = None
    pieces: Callable[[Any], list[Piece]] | None = None
    compute: Callable[[Piece, Any], dict[str, Any]] | None = None
    assemble: Callable[[Any, list[Piece], list[dict[str, Any]]], dict[str, Any]] | None = None
    plot: Callable[[dict[str, Any], Path], None] | None = None

    def __post_init__(self) -> None:
        if self.sweep is None and None in (self.pieces, self.compute, self.assemble):
            raise ValueError(f"reproduction {self.name!r}: give a sweep (and a figure), or the legacy "
                             "pieces/compute/assemble")
        if self.sweep is not None and self.sweep.name != self.experiment:
            raise ValueError(f"reproduction {self.name!r}: its sweep is named {self.sweep.name!r}, "
                             f"its experiment {self.experiment!r}")


REGISTRY: dict[str, Reproduction] = {}

ARCHIVE = Path(__file__).resolve().parents[1] / "results" / "paper"
"""The paper-scale results archived with the repository (``reproduce NAME --scale paper --out results/paper``):
the chapters' claims judge them too (:func:`archived`)."""


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


def save_figure(fig: Any, path: Path, title: str) -> None:
    """Title a reproduction's matplotlib figure, write it to ``path`` and close it.

    The title sits above the axes' own titles (y = 1.02) and the saved image is cropped to what is
    drawn, title included.
    """
    import matplotlib.pyplot as plt

    fig.suptitle(title, y=1.02)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


def archived(name: str, directory: str | os.PathLike = ARCHIVE) -> Any:
    """The table of sweep reproduction ``name`` at scale ``paper`` from the pieces cached under ``directory/.cache``,
    computing none: pieces the archive lacks are left out (``table.attrs["pieces"]`` counts those read)."""
    reproduction = get(name)
    if reproduction.sweep is None:
        raise ValueError(f"reproduction {name!r} has no sweep: its archive is read from its JSON")
    return sweeps.run(reproduction.sweep, scales.get(reproduction.experiment, "paper"),
                      cache=Path(directory) / ".cache", only_cached=True, show_progress=False)


def machine() -> dict[str, Any]:
    """JAX version, backend and devices (recorded in every output)."""
    return {"jax": jax.__version__, "backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()]}


def run(name: str, scale: str | None = None, out: str | os.PathLike | None = None, *, resume: bool = True,
        plot: bool = True, shard: tuple[int, int] | None = None) -> dict[str, Any]:
    """Run reproduction ``name`` at ``scale`` and return its result dict.

    With ``out`` the result is written to ``out/NAME.json`` (and ``out/NAME.png``) and every finished
    piece is cached under ``out/.cache``; ``resume=False`` ignores (and overwrites) the cache.
    Without ``out`` nothing is written.  With ``shard=(i, n)`` only that share of the pieces is
    computed into the cache (``out`` is then required) and no figure is drawn; the result dict counts
    the pieces of the shard.
    """
    reproduction = get(name)
    scale = scales.resolve(scale)
    settings = scales.get(reproduction.experiment, scale)
    if shard is not None and out is None:
        raise ValueError("shard needs out: the shards meet in the piece cache under out/.cache")
    if reproduction.sweep is None:
        return _run_legacy(reproduction, scale, settings, out, resume, plot, shard)
    start = time.perf_counter()
    out = None if out is None else Path(out)
    table = sweeps.run(reproduction.sweep, settings, cache=None if out is None else out / ".cache", resume=resume,
                       shard=shard)
    output: dict[str, Any] = {
        "name": name, "scale": scale, "settings": settings.as_dict(), "seconds": time.perf_counter() - start,
        "compute_seconds": table.attrs["compute_seconds"], "pieces": table.attrs["pieces"],
        "cached_pieces": table.attrs["cached_pieces"], **machine(),
    }
    if shard is not None:
        output["shard"] = list(shard)
        return output
    output["table"] = {str(k): table[k].tolist() for k in table.columns}
    if reproduction.summary is not None:
        output["summary"] = dict(reproduction.summary(table, settings))
    output = to_jsonable(output)
    if out is not None:
        atomic_write_json(out / f"{name}.json", output)
        if plot and reproduction.figure is not None:
            def draw(path: Path) -> None:
                fig = reproduction.figure(table, settings)
                save_figure(fig, path, f"{reproduction.description} — scale {scale}")

            _write_png_atomically(draw, out / f"{name}.png")
    return output


# ---------------------------------------------------------------------------------------------
# Legacy reproductions (pieces/compute/assemble), until every chapter uses a sweep
# ---------------------------------------------------------------------------------------------


def _run_legacy(reproduction: Reproduction, scale: str, settings: scales.ExperimentSettings, out: Any, resume: bool,
                plot: bool, shard: tuple[int, int] | None = None) -> dict[str, Any]:
    """The legacy runner: every piece (loaded from the cache or computed), assembled and drawn.

    With ``shard=(i, n)`` only the pieces whose index is ≡ i (mod n) are computed into the cache, as in
    :func:`ntkbook.sweep.run`: nothing is assembled or drawn, and the result counts the shard's pieces.
    """
    name = reproduction.name
    start = time.perf_counter()
    items = reproduction.pieces(settings)
    if shard is not None:
        if (not isinstance(shard, tuple) or len(shard) != 2 or not all(isinstance(v, int) for v in shard)
                or not 0 <= shard[0] < shard[1]):
            raise ValueError(f"shard must be (i, n) with 0 <= i < n, got {shard!r}")
        items = items[shard[0]::shard[1]]
    cache = None
    if out is not None:  # the sweep engine's piece cache: a legacy piece's result is stored as its "columns"
        out = Path(out)
        cache = sweeps.PieceCache(out / ".cache" / name / f"{scale}-{digest(settings.as_dict())[:12]}")
    results, cached, compute_seconds = [], 0, 0.0
    for item in progress(items, desc=name, total=len(items)):
        result = cache.load(item) if (cache is not None and resume) else None
        if result is None:
            t0 = time.perf_counter()
            result = to_jsonable(reproduction.compute(item, settings))
            result["_seconds"] = time.perf_counter() - t0
            if cache is not None:
                cache.save(item, result, result["_seconds"])
        else:
            cached += 1
        compute_seconds += float(result.get("_seconds", 0.0))
        results.append(result)
    if shard is not None:
        return to_jsonable({"name": name, "scale": scale, "settings": settings.as_dict(),
                            "seconds": time.perf_counter() - start, "compute_seconds": compute_seconds,
                            "pieces": len(items), "cached_pieces": cached, **machine(), "shard": list(shard)})
    body = reproduction.assemble(settings, items, results)
    recorded = settings.as_dict() | dict(body.pop("settings", {}))
    output = {"name": name, "scale": scale, "settings": recorded,
              "seconds": time.perf_counter() - start, "compute_seconds": compute_seconds,
              "pieces": len(items), "cached_pieces": cached, **machine(), **body}
    output = to_jsonable(output)
    if out is not None:
        atomic_write_json(out / f"{name}.json", output)
        if plot and reproduction.plot is not None:
            _write_png_atomically(lambda path: reproduction.plot(output, path), out / f"{name}.png")
    return output


def _write_png_atomically(draw: Callable[[Path], None], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg", force=False)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".png")
    os.close(fd)
    os.chmod(tmp, file_mode())
    try:
        draw(Path(tmp))
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
