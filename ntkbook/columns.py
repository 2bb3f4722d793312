"""Column tables: a list of per-piece result dicts concatenated into one dict of NumPy columns.

The chapter modules of Chapters 4–5 compute one dict of equal-length arrays per width (one entry
per seed) and hand the chapter one dict of columns (:func:`stack_rows`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["stack_rows"]


def stack_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Concatenate ``rows`` (dicts with the same keys; scalars or 1-D arrays) column by column.

    Returns:
        ``{key: np.concatenate([atleast_1d(row[key]) for row in rows])}``, keys in the order of
        the first row.

    Raises:
        ValueError: if ``rows`` is empty or the rows do not all have the same keys.
    """
    if not rows:
        raise ValueError("rows must contain at least one dict")
    keys = list(rows[0])
    for i, r in enumerate(rows):
        if set(r) != set(keys):
            raise ValueError(f"rows[{i}] has keys {sorted(r)}, expected {sorted(keys)}")
    return {k: np.concatenate([np.atleast_1d(np.asarray(r[k])) for r in rows]) for k in keys}
