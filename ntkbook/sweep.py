"""The one sweep engine: grids of pieces, seeds from coordinates, tidy tables, a resumable piece cache.

An experiment that varies sizes (widths, seeds, activations, ...) is a :class:`Sweep`: a function
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
from .random import fold_key
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
    words, folded into ``jax.random.key(0)`` (:func:`ntkbook.random.fold_key`); two different
    coordinates give unrelated keys, and the same coordinates give the same key in any process.  Use it
    also for randomness shared by several pieces, e.g. ``piece_key(name, {"seed": s})`` for data common
    to all widths of seed ``s``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    words = np.frombuffer(hashlib.sha256(canonical_json({"sweep": name, "coords": coords}).encode()).digest()[:16],
                          dtype="<u4")
    return fold_key(jax.random.key(0), *(int(w) for w in words))


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
    sweep: Sweep,
    settings: ExperimentSettings,
    *,
    cache: str | Path | None = None,
    resume: bool = True,
    shard: tuple[int, int] | None = None,
    show_progress: bool = True,
) -> pd.DataFrame:
    """Compute (or load) every piece of ``sweep`` and return one tidy table.

    Args:
        sweep: the experiment.
        settings: its typed settings (of the type registered for ``sweep.name``).
        cache: a directory for the piece cache, or None for no cache (the chapters' default).
        resume: with a cache, reuse finished pieces (False recomputes and overwrites them).
        shard: ``(i, n)``: compute only the pieces with index ≡ i (mod n) and return their rows.
        show_progress: a tqdm bar over the pieces (silenced by ``NTKBOOK_PROGRESS=0``).

    Returns:
        A DataFrame with the coordinate columns first, then the piece's columns, pieces in the order
        of ``sweep.pieces(settings)``.  ``table.attrs`` holds ``sweep``, ``pieces`` (count),
        ``cached_pieces``, ``seconds`` (wall time of this call) and ``compute_seconds`` (time spent
        computing pieces, cached pieces counting with the time recorded when they were computed).
    """
    if not isinstance(sweep, Sweep):
        raise TypeError(f"sweep must be a Sweep, got {type(sweep).__name__}")
    if not isinstance(settings, ExperimentSettings):
        raise TypeError(f"settings must be the typed settings of {sweep.name!r} (ntkbook.scales.get), "
                        f"got {type(settings).__name__}")
    start = time.perf_counter()
    pieces = [to_jsonable(dict(p)) for p in sweep.pieces(settings)]
    if not pieces:
        raise ValueError(f"sweep {sweep.name!r} has no pieces for these settings")
    names = list(pieces[0])
    seen = set()
    for p in pieces:
        if list(p) != names:
            raise ValueError(f"sweep {sweep.name!r}: every piece must have the coordinates {names}, got {list(p)}")
        text = canonical_json(p)
        if text in seen:
            raise ValueError(f"sweep {sweep.name!r}: the piece {p} appears twice")
        seen.add(text)
    selected = range(len(pieces))
    if shard is not None:
        i, n = _check_shard(shard)
        selected = range(i, len(pieces), n)
    store = None if cache is None else PieceCache(cache_directory(sweep, settings, cache))
    frames, cached, compute_seconds = [], 0, 0.0
    iterator = (pieces[j] for j in selected)
    if show_progress:
        iterator = progress(iterator, desc=sweep.name, total=len(selected))
    for coords in iterator:
        columns = store.load(coords) if (store is not None and resume) else None
        if columns is None:
            t0 = time.perf_counter()
            frame = _as_frame(sweep.compute(coords, settings, piece_key(sweep.name, coords)),
                              f"sweep {sweep.name!r}, piece {coords}")
            seconds = time.perf_counter() - t0
            columns = {str(k): _plain(frame[k].tolist()) for k in frame.columns}
            if store is not None:
                store.save(coords, columns, seconds)
        else:
            cached += 1
            seconds = store.seconds(coords)
        compute_seconds += seconds
        frame = pd.DataFrame(columns)
        _check_columns(sweep, coords, frame)
        for k in reversed(names):
            if k in frame.columns:
                if not (frame[k] == coords[k]).all():
                    raise ValueError(f"sweep {sweep.name!r}, piece {coords}: column {k!r} disagrees with the "
                                     "piece's coordinate")
                frame = frame.drop(columns=k)
            frame.insert(0, k, [coords[k]] * len(frame))
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=names)
    table.attrs.update(sweep=sweep.name, pieces=len(selected), cached_pieces=cached,
                       seconds=time.perf_counter() - start, compute_seconds=compute_seconds)
    return table


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
    "run",
    "settings_digest",
]
