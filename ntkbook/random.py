"""Explicit PRNG keys derived from integer coordinates (a width, a seed index, ...).

One helper, :func:`fold_key`, used by the chapter modules that derive a key for every
(width, seed) cell of a sweep from one root key.  ``fold_key(key, m, s)`` is
``fold_in(fold_in(key, m), s)``: the same coordinates always give the same key, whatever order
the cells are computed in.  :func:`numpy_generator` turns a key into a NumPy generator, for Monte Carlo
loops that draw many arrays of one kind in NumPy (no XLA compilation per shape).
"""

from __future__ import annotations

import jax
import numpy as np

__all__ = ["fold_key", "numpy_generator"]


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


def numpy_generator(key: jax.Array) -> np.random.Generator:
    """A NumPy ``Generator`` (PCG64) seeded with the bits of the JAX ``key``: still one explicit key per
    stream, and the same key always gives the same draws, but nothing is compiled (a JAX draw compiles once
    per array shape).  Keys that differ give independent seeds (the key data, a uint32 vector, is the seed)."""
    return np.random.default_rng(np.asarray(jax.random.key_data(key)).astype(np.uint64).tolist())
