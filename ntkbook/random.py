"""Explicit PRNG keys derived from integer coordinates (a width, a seed index, ...).

One helper, :func:`fold_key`, used by the chapter modules that derive a key for every
(width, seed) cell of a sweep from one root key.  ``fold_key(key, m, s)`` is
``fold_in(fold_in(key, m), s)``: the same coordinates always give the same key, whatever order
the cells are computed in.
"""

from __future__ import annotations

import jax

__all__ = ["fold_key"]


def fold_key(key: jax.Array, *values: int) -> jax.Array:
    """``key`` folded with each integer of ``values`` in turn (``jax.random.fold_in``).

    Args:
        key: a JAX PRNG key (new-style ``jax.random.key`` or legacy uint32[2]).
        *values: integers (Python or NumPy), e.g. a width and a seed index.

    Returns:
        A key of the same kind as ``key``.

    Raises:
        TypeError: if a value is not an integer.
    """
    for v in values:
        if isinstance(v, bool) or not hasattr(v, "__index__"):
            raise TypeError(f"values must be integers, got {v!r}")
        key = jax.random.fold_in(key, int(v))
    return key
