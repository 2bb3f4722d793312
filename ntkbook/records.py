"""Plain-JSON records shared by the claims ledger, the sweep cache and the reproductions.

* :func:`to_jsonable` — numbers and arrays (NumPy, JAX) to plain JSON values;
* :func:`canonical_json` and :func:`digest` — a stable text and SHA-256 of any such value (dict keys sorted);
* :func:`atomic_write_bytes` and :func:`atomic_write_json` — readers see the old file or the whole new one.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np


def to_jsonable(value: Any) -> Any:
    """Convert numbers/arrays (NumPy, JAX) to plain JSON; non-finite floats become strings."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        return f if math.isfinite(f) else str(f)
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        arr = np.asarray(value)
        return to_jsonable(arr.item()) if arr.ndim == 0 else to_jsonable(arr.tolist())
    return str(value)


def canonical_json(value: Any) -> str:
    """A stable JSON text of ``value`` (via :func:`to_jsonable`; dict keys sorted, no spaces)."""
    return json.dumps(to_jsonable(value), sort_keys=True, separators=(",", ":"))


def digest(value: Any) -> str:
    """SHA-256 (hex) of :func:`canonical_json` of ``value``: equal values give equal digests."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def file_mode() -> int:
    """The mode a new file gets under the current umask (mkstemp's files are 0600 otherwise)."""
    return _FILE_MODE


def _default_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


_FILE_MODE = _default_file_mode()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.chmod(tmp, _FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, value: Any) -> None:
    """Write ``value`` as indented JSON to ``path`` atomically (:func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, (json.dumps(to_jsonable(value), indent=1) + "\n").encode())


