"""The one sweep engine: grids of pieces, seeds from coordinates, tidy tables, a resumable piece cache.

A chapter's experiment is a plain function of a PRNG key and its coordinates, run over a grid::

    def kernel_change(key, width, radius):
        ...
        return {"ΔK": ..., "bound": ...}

    rows = nb.sweep.run(kernel_change, width=(64, 256),
                        radius=(0.5, 1.0), seed=range(4))

:func:`run` calls it once per *piece* (one point of the grid), with the key derived from the function's
name and the piece's coordinates (:func:`piece_key`); the axis ``seed`` only selects the key and is not
passed to the function.  ``jit=True`` compiles the function (the coordinates other than the seed are
static); ``vmap_seeds=True`` computes all seeds of a grid point in one compiled, vmapped call (the
function must then be traceable and return arrays).  The result is one tidy pandas table: the coordinates,
then the function's columns, one row per piece (or per sub-item, when the function returns equal-length
arrays).

The paper figures that the command line reproduces use the typed form, a :class:`Sweep`: a function
that lists its *pieces* — small dicts of coordinates such as ``{"width": 256, "seed": 3}`` — and a
function that computes one piece.  :func:`run` computes the pieces and returns one tidy pandas table
(one row per piece and sub-item, coordinates as columns).  The chapters and the command line
(``python -m ntkbook reproduce``) call the same :func:`run`, so they cannot drift apart.

Determinism.  The PRNG key of a piece is derived from the sweep's name and the piece's coordinates
only (:func:`piece_key`), never from its position in a loop; a piece therefore computes the same
numbers when run alone, inside a sweep, after a resume, or on another worker.

Cache and resume.  With ``cache=DIR`` every finished piece is written to
``DIR/<sweep>/<settings digest>/<piece digest>.json`` by an atomic rename, together with a checksum
of its rows; an interrupted run resumes where it stopped, and a file that does not parse or whose
checksum does not match is recomputed, never trusted.  The settings digest covers every field of the
typed settings and the sweep's ``version``, so a changed setting never reuses a stale piece.

Spreading the work.  ``shard=(i, n)`` computes only the pieces whose index is ≡ i (mod n) — usable
directly as a Slurm job-array index (``--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT``) — every
shard writing into the shared cache; a last call without ``shard`` loads every piece from the cache
(computing any that is missing) and returns the whole table.  Within one piece, independent runs can
be spread over the devices of one host with :mod:`ntkbook.parallel` (JAX's own sharding).
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pandas as pd

from . import _validation as V
from .progress import progress
from .random import fold_words
from .records import atomic_write_bytes, canonical_json, digest, to_jsonable
from .scales import ExperimentSettings

Coords = Mapping[str, Any]
"""The coordinates of one piece: JSON scalars (int, float, str, bool) by name."""
Rows = pd.DataFrame | Mapping[str, Any] | Sequence[Mapping[str, Any]]
"""What a piece returns: a DataFrame, a dict of equal-length columns (scalars are broadcast), or a
list of row dicts."""


@dataclass(frozen=True)
class Sweep:
    """A named experiment over a grid of pieces.

    Attributes:
        name: the experiment's key in :data:`ntkbook.scales.TABLE` (its settings type) and the
            cache namespace; also salts every piece's key.
        pieces: settings → the list of piece coordinates (use :func:`grid` for products).
        compute: (coordinates, settings, key) → the rows of that piece.  It must be a pure function
            of its arguments (all randomness from ``key``).
        columns: column name → description with its unit, for the documentation of the table (and
            checked: every piece must return exactly these columns besides the coordinates).  Empty:
            not checked.
        version: part of the cache key; change it when the piece's code changes its numbers.
    """

    name: str
    pieces: Callable[[ExperimentSettings], Sequence[Coords]]
    compute: Callable[[Coords, ExperimentSettings, jax.Array], Rows]
    columns: Mapping[str, str] = field(default_factory=dict)
    version: str = "1"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        V.callable_("pieces", self.pieces)
        V.callable_("compute", self.compute)


def grid(**axes: Iterable[Any]) -> list[dict[str, Any]]:
    """The Cartesian product of the axes, in order (the last axis varies fastest).

    ``grid(width=(64, 256), seed=range(3))`` → ``[{"width": 64, "seed": 0}, ..., {"width": 256, "seed": 2}]``.
    NumPy scalars are converted to Python numbers so that coordinates are plain JSON.
    """
    names = list(axes)
    values = [[to_jsonable(v) for v in axis] for axis in axes.values()]
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]


def piece_key(name: str, coords: Coords) -> jax.Array:
    """The PRNG key of a piece: a function of the sweep name and the piece's coordinates only.

    The SHA-256 of the canonical JSON of ``{"sweep": name, "coords": coords}`` gives four 32-bit
    words, folded into ``jax.random.key(0)`` (:func:`ntkbook.random.fold_words`); two different
    coordinates give unrelated keys, and the same coordinates give the same key in any process.  Use it
    also for randomness shared by several pieces, e.g. ``piece_key(name, {"seed": s})`` for data common
    to all widths of seed ``s``.
    """
    return piece_keys(name, [coords])[0]


def piece_keys(name: str, many: Sequence[Coords]) -> jax.Array:
    """:func:`piece_key` of several pieces, stacked (one compiled call, not four eager ``fold_in`` per key: a
    sweep of 200 seeds × 8 grid points spent 4 CPU-s deriving its keys one by one)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    words = [np.frombuffer(hashlib.sha256(canonical_json({"sweep": name, "coords": c}).encode()).digest()[:16],
                           dtype="<u4") for c in many]
    return fold_words(jax.random.key(0), np.stack(words))


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` → ``(i, n)`` with 0 ≤ i < n (the command line's ``--shard``)."""
    try:
        i, n = (int(part) for part in str(text).split("/"))
    except ValueError:
        raise ValueError(f"shard must look like 'i/n' (e.g. '0/4'), got {text!r}") from None
    return _check_shard((i, n))


def _check_shard(shard: tuple[int, int]) -> tuple[int, int]:
    if (not isinstance(shard, tuple) or len(shard) != 2 or not all(isinstance(v, int) for v in shard)
            or not 0 <= shard[0] < shard[1]):
        raise ValueError(f"shard must be (i, n) with 0 <= i < n, got {shard!r}")
    return shard


def _plain(value: Any) -> Any:
    """NumPy/JAX scalars and arrays → Python scalars and lists; non-finite floats stay floats (NaN
    marks "no value" in many tables), unlike :func:`ntkbook.records.to_jsonable`."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return np.asarray(value).tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _as_frame(rows: Rows, where: str) -> pd.DataFrame:
    if isinstance(rows, pd.DataFrame):
        return rows.reset_index(drop=True)
    if isinstance(rows, Mapping):
        columns = {k: _plain(v) for k, v in rows.items()}
        lengths = {len(v) for v in columns.values() if isinstance(v, list)}
        if len(lengths) > 1:
            raise ValueError(f"{where}: columns of different lengths {sorted(lengths)}")
        n = lengths.pop() if lengths else 1
        return pd.DataFrame({k: v if isinstance(v, list) else [v] * n for k, v in columns.items()})
    if isinstance(rows, Sequence):
        return pd.DataFrame([dict(r) for r in rows])
    raise TypeError(f"{where}: a piece must return a DataFrame, a dict of columns or a list of rows, "
                    f"got {type(rows).__name__}")


class PieceCache:
    """Finished pieces of one (sweep, settings), one checksummed JSON file each (atomic writes)."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def path(self, coords: Coords) -> Path:
        return self.directory / f"{digest(coords)[:24]}.json"

    def load(self, coords: Coords) -> dict[str, list] | None:
        """The cached columns of a piece, or None if absent or corrupted (corrupted files are removed)."""
        path = self.path(coords)
        if not path.exists():
            return None
        try:
            record = json.loads(path.read_text())
            ok = record["piece"] == to_jsonable(dict(coords)) and record["sha256"] == digest(record["columns"])
        except (OSError, ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            warnings.warn(f"corrupted cache file {path} is ignored and its piece recomputed", stacklevel=2)
            path.unlink(missing_ok=True)
            return None
        return record["columns"]

    def save(self, coords: Coords, columns: dict[str, list], seconds: float) -> None:
        record = {"piece": dict(coords), "sha256": digest(columns), "columns": columns, "seconds": seconds}
        atomic_write_bytes(self.path(coords), (json.dumps(record) + "\n").encode())

    def seconds(self, coords: Coords) -> float:
        try:
            return float(json.loads(self.path(coords).read_text()).get("seconds", 0.0))
        except (OSError, ValueError):
            return 0.0


def settings_digest(sweep: Sweep, settings: ExperimentSettings) -> str:
    """A short digest of the settings and the sweep's version: the cache directory of this sweep."""
    return digest({"settings": settings.as_dict(), "version": sweep.version})[:16]


def cache_directory(sweep: Sweep, settings: ExperimentSettings, cache: str | Path) -> Path:
    return Path(cache) / sweep.name / settings_digest(sweep, settings)


def run(
    experiment: Sweep | Callable[..., Rows],
    settings: Any = None,
    *,
    cache: str | Path | None = None,
    resume: bool = True,
    shard: tuple[int, int] | None = None,
    show_progress: bool = True,
    jit: bool = False,
    vmap_seeds: bool = False,
    same_key_across: Sequence[str] = (),
    name: str | None = None,
    only_cached: bool = False,
    **axes: Iterable[Any],
) -> pd.DataFrame:
    """Compute (or load) every piece of an experiment and return one tidy table.

    Two forms:

    * ``run(fn, width=..., seed=range(s), ...)`` — a chapter's experiment: ``fn(key, **coordinates)``
      returns its columns (a dict of scalars or of equal-length arrays, a DataFrame or a list of rows) for one
      point of the grid of ``axes``; ``seed`` only selects the key.  ``jit`` compiles ``fn`` (coordinates
      other than the seed static); ``vmap_seeds`` computes the seeds of one grid point in one compiled,
      vmapped call (``fn`` traceable, returning arrays).  ``settings`` (optional: the chapter's
      :class:`~ntkbook.scales.Sizes`) enters the cache's digest with ``fn``'s source.
    * ``run(sweep, settings)`` — a :class:`Sweep` with its typed settings (the reproductions).

    Args:
        experiment: the function, or a :class:`Sweep`.
        settings: see above.
        cache: a directory for the piece cache, or None for no cache (the chapters' default).
        resume: with a cache, reuse finished pieces (False recomputes and overwrites them).
        shard: ``(i, n)``: compute only the pieces (grid points, with ``vmap_seeds``) with index ≡ i (mod n).
        show_progress: a tqdm bar over the pieces (silenced by ``NTKBOOK_PROGRESS=0``).
        jit, vmap_seeds: see above (function form only).
        same_key_across: axes left out of the key (function form only): the pieces that differ only in these
            coordinates get the same key, so they treat the same random draws — a paired comparison, e.g. one
            network read in two coordinate systems, or trained with two step sizes.
        name: the experiment's name in keys and the cache (default: the function's ``__name__``).
        only_cached: read the pieces the cache holds and leave out the others, computing nothing (an archive).
        **axes: coordinate name → values (function form only); the grid is their product, last axis fastest.

    Returns:
        A DataFrame with the coordinate columns first, then the piece's columns, pieces in grid order.
        ``table.attrs`` holds ``sweep``, ``pieces`` (count), ``cached_pieces``, ``seconds`` (wall time of this
        call) and ``compute_seconds`` (time spent computing pieces, cached pieces counting with the time
        recorded when they were computed).

    Raises:
        TypeError: for an experiment that is neither, or settings of the wrong type.
        ValueError: for an empty grid, a repeated piece, or columns that disagree with the coordinates.
    """
    start = time.perf_counter()
    if isinstance(experiment, Sweep):
        if axes or jit or vmap_seeds or name is not None:
            raise TypeError("a Sweep takes its pieces from its settings: no axes, jit, vmap_seeds or name")
        if not isinstance(settings, ExperimentSettings):
            raise TypeError(f"settings must be the typed settings of {experiment.name!r} (ntkbook.scales.get), "
                            f"got {type(settings).__name__}")
        label = experiment.name
        pieces = [to_jsonable(dict(p)) for p in experiment.pieces(settings)]
        directory = None if cache is None else cache_directory(experiment, settings, cache)

        def compute(coords: Coords) -> Rows:
            return experiment.compute(coords, settings, piece_key(label, coords))

        groups = None
    elif callable(experiment):
        label = V.callable_("experiment", experiment).__name__ if name is None else name
        if not isinstance(label, str) or not label or label == "<lambda>":
            raise ValueError(f"name must be a non-empty string naming the experiment, got {label!r}")
        if not axes:
            raise ValueError("give the grid as keyword arguments, e.g. width=(64, 256), seed=range(4)")
        if vmap_seeds and "seed" not in axes:
            raise ValueError("vmap_seeds needs a 'seed' axis")
        pieces = grid(**axes)
        directory = None if cache is None else Path(cache) / label / _function_digest(experiment, settings)
        unknown = sorted(set(same_key_across) - set(axes) | ({"seed"} & set(same_key_across)))
        if unknown:
            raise ValueError(f"same_key_across must name axes of the grid other than 'seed', got {unknown}")
        compute, groups = _function_compute(experiment, label, list(axes), jit=jit or vmap_seeds,
                                            vmap_seeds=vmap_seeds, shared=tuple(same_key_across))
    else:
        raise TypeError(f"experiment must be a function or a Sweep, got {type(experiment).__name__}")
    if not pieces:
        raise ValueError(f"sweep {label!r} has no pieces")
    _check_pieces(label, pieces)
    names = list(pieces[0])
    units = [[p] for p in pieces] if groups is None else groups(pieces)
    selected = range(len(units))
    if shard is not None:
        i, n = _check_shard(shard)
        selected = range(i, len(units), n)
    store = None if directory is None else PieceCache(directory)
    if only_cached and store is None:
        raise ValueError("only_cached reads a cache: give cache=DIR")
    frames, cached, compute_seconds, left_out = [], 0, 0.0, 0
    iterator = (units[j] for j in selected)
    if show_progress:
        iterator = progress(iterator, desc=label, total=len(selected))
    for unit in iterator:
        loaded = [store.load(c) if (store is not None and resume) else None for c in unit]
        if any(columns is None for columns in loaded) and only_cached:
            left_out += len(unit)
            continue
        if any(columns is None for columns in loaded):
            t0 = time.perf_counter()
            results = compute(unit[0]) if groups is None else compute(unit)
            seconds = (time.perf_counter() - t0) / len(unit)
            loaded = []
            for coords, rows in zip(unit, [results] if groups is None else results, strict=True):
                frame = _as_frame(rows, f"sweep {label!r}, piece {coords}")
                columns = {str(k): _plain(frame[k].tolist()) for k in frame.columns}
                if store is not None:
                    store.save(coords, columns, seconds)
                loaded.append(columns)
            compute_seconds += seconds * len(unit)
        else:
            cached += len(unit)
            compute_seconds += sum(store.seconds(c) for c in unit)
        for coords, columns in zip(unit, loaded, strict=True):
            frame = pd.DataFrame(columns)
            if isinstance(experiment, Sweep):
                _check_columns(experiment, coords, frame)
            for k in reversed(names):
                if k in frame.columns:
                    if not (frame[k] == coords[k]).all():
                        raise ValueError(f"sweep {label!r}, piece {coords}: column {k!r} disagrees with the "
                                         "piece's coordinate")
                    frame = frame.drop(columns=k)
                frame.insert(0, k, [coords[k]] * len(frame))
            frames.append(frame)
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=names)
    table.attrs.update(sweep=label, pieces=sum(len(units[j]) for j in selected) - left_out, cached_pieces=cached,
                       seconds=time.perf_counter() - start, compute_seconds=compute_seconds)
    return table


def _check_pieces(label: str, pieces: list[dict[str, Any]]) -> None:
    names, seen = list(pieces[0]), set()
    for p in pieces:
        if list(p) != names:
            raise ValueError(f"sweep {label!r}: every piece must have the coordinates {names}, got {list(p)}")
        text = canonical_json(p)
        if text in seen:
            raise ValueError(f"sweep {label!r}: the piece {p} appears twice")
        seen.add(text)


def _function_digest(fn: Callable[..., Any], settings: Any) -> str:
    """A short digest of a function's source and the settings it was run with: its cache directory."""
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        source = getattr(fn, "__qualname__", repr(fn))
    sizes = settings.as_dict() if hasattr(settings, "as_dict") else settings
    return digest({"source": source, "settings": to_jsonable(sizes)})[:16]


def _function_compute(fn: Callable[..., Any], label: str, axis_names: list[str], *, jit: bool,
                      vmap_seeds: bool, shared: tuple[str, ...] = ()) -> tuple[Callable[..., Any],
                                                                              Callable[..., Any] | None]:
    """(compute, groups) for the function form of :func:`run`: ``compute(coords)`` (or, with ``vmap_seeds``,
    ``compute(list of coords)`` → list of rows) and how pieces group (None: one piece at a time)."""
    static = tuple(a for a in axis_names if a != "seed")

    def arguments(coords: Coords) -> dict[str, Any]:
        return {k: coords[k] for k in static}

    def keys(unit: list[Coords]) -> jax.Array:
        return piece_keys(label, [{k: v for k, v in c.items() if k not in shared} for c in unit])

    if vmap_seeds:
        def batched(keys: jax.Array, **others: Any) -> Any:
            return jax.vmap(lambda k: fn(k, **others))(keys)

        compiled = jax.jit(batched, static_argnames=static)

        def compute_group(unit: list[Coords]) -> list[dict[str, Any]]:
            out = jax.tree_util.tree_map(np.asarray, compiled(keys(unit), **arguments(unit[0])))
            return [jax.tree_util.tree_map(lambda a, i=i: a[i], out) for i in range(len(unit))]

        def groups(pieces: list[Coords]) -> list[list[Coords]]:
            by: dict[str, list[Coords]] = {}
            for p in pieces:
                by.setdefault(canonical_json(arguments(p)), []).append(p)
            return list(by.values())

        return compute_group, groups
    call = jax.jit(fn, static_argnames=static) if jit else fn
    return (lambda coords: call(keys([coords])[0], **arguments(coords))), None


def _check_columns(sweep: Sweep, coords: Coords, frame: pd.DataFrame) -> None:
    if not sweep.columns:
        return
    got = set(frame.columns) - set(coords)
    want = set(sweep.columns)
    if got != want:
        raise ValueError(f"sweep {sweep.name!r}, piece {coords}: columns {sorted(got)} differ from the declared "
                         f"{sorted(want)} (missing {sorted(want - got)}, unexpected {sorted(got - want)})")


__all__ = [
    "Coords",
    "PieceCache",
    "Rows",
    "Sweep",
    "cache_directory",
    "grid",
    "parse_shard",
    "piece_key",
    "piece_keys",
    "run",
    "settings_digest",
]
