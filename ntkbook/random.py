"""Explicit PRNG keys derived from the coordinates of a computation (a width, a seed index, a radius,
an activation name, ...): the one home of key derivation.

``fold_key(key, m, s)`` is ``fold_in(fold_in(key, m), s)``: the same coordinates always give the same
key, whatever order the cells are computed in and whatever other cells a sweep contains — never derive a
key from a position in a list (``fold_in(key, i)`` for the i-th width), which changes when the list
does.  Integers are folded as they are; a string or a float is folded as the first 32 bits of the
SHA-256 of its text (``repr`` of the float), so ``fold_key(key, "tanh", 4.0)`` is a key too.
:func:`ntkbook.sweep.piece_key` is :func:`fold_key` of the hash of a sweep's name and a piece's
coordinates (computed by :func:`fold_words`, many keys in one compiled call).
:func:`numpy_generator` turns a key into a NumPy generator, for Monte Carlo loops that draw many
arrays of one kind in NumPy (no XLA compilation per shape).
:func:`normal` is ``jax.random.normal`` with the same numbers, compiled once per power of two of the size
instead of once per shape (model initializations at many widths).
"""

from __future__ import annotations

import functools
import hashlib
import math
import numbers

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["fold_key", "fold_words", "normal", "numpy_generator"]

# draws of at most this many numbers share one compiled program per power of two of their size
SHARED_DRAW_MAX = 1 << 20


def _word(value: object) -> int:
    """The integer folded into a key for one coordinate."""
    if isinstance(value, bool) or value is None:
        raise TypeError(f"values must be integers, floats or strings, got {value!r}")
    if hasattr(value, "__index__"):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"a float coordinate must be finite, got {value!r}")
        text = repr(value)
    elif isinstance(value, str):
        text = "s:" + value
    else:
        raise TypeError(f"values must be integers, floats or strings, got {value!r}")
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")


def fold_key(key: jax.Array, *values: int | float | str) -> jax.Array:
    """``key`` folded with each coordinate of ``values`` in turn (``jax.random.fold_in``).

    Args:
        key: a JAX PRNG key (new-style ``jax.random.key`` or legacy uint32[2]).
        *values: coordinates: integers (Python or NumPy, folded as they are), finite floats and
            strings (folded as 32 bits of the SHA-256 of their text; ``4`` and ``4.0`` give different
            keys).

    Returns:
        A key of the same kind as ``key``.

    Raises:
        TypeError: if a value is not an integer, a float or a string (booleans and None included).
        ValueError: for a non-finite float.
    """
    for v in values:
        key = jax.random.fold_in(key, _word(v))
    return key


@jax.jit
def _fold_words(key: jax.Array, words: jax.Array) -> jax.Array:
    for i in range(words.shape[0]):
        key = jax.random.fold_in(key, words[i])
    return key


def fold_words(key: jax.Array, words: object) -> jax.Array:
    """``fold_key(key, *row)`` for every row of a (n, k) array of 32-bit unsigned words: n keys, stacked, from
    one compiled call (``fold_key`` dispatches one eager ``fold_in`` per value, which costs milliseconds when a
    sweep derives thousands of keys).

    Raises:
        ValueError: if ``words`` is not a 2-d array of integers in [0, 2³²).
    """
    array = np.asarray(words)
    if array.ndim != 2 or array.dtype.kind not in "iu" or (array.size and (array.min() < 0 or array.max() >= 1 << 32)):
        raise ValueError(f"words must be a 2-d array of integers in [0, 2^32), got {array!r}")
    return jax.vmap(_fold_words, in_axes=(None, 0))(key, jnp.asarray(array.astype(np.uint32)))


def numpy_generator(key: jax.Array) -> np.random.Generator:
    """A NumPy ``Generator`` (PCG64) seeded with the bits of the JAX ``key``: still one explicit key per
    stream, and the same key always gives the same draws, but nothing is compiled (a JAX draw compiles once
    per array shape).  Keys that differ give independent seeds (the key data, a uint32 vector, is the seed)."""
    return np.random.default_rng(np.asarray(jax.random.key_data(key)).astype(np.uint64).tolist())


@functools.partial(jax.jit, static_argnums=(1, 2))
def _normal_of_size(key: jax.Array, size: int, dtype: jnp.dtype) -> jax.Array:
    return jax.random.normal(key, (size,), dtype)


def normal(key: jax.Array, shape: tuple[int, ...] | list[int], dtype: object = None, *,
           scale: float = 1.0) -> jax.Array:
    """``jax.random.normal(key, shape, dtype) * float(scale)``: the same numbers, bit for bit, compiled once per
    power of two of the size rather than once per shape.

    JAX compiles a draw once for every array shape; initializing networks of many widths compiled hundreds
    of them (252 programs, 27 s of compilation, in three of the unit-test files).  With JAX's partitionable
    threefry (``jax_threefry_partitionable``, the default) the i-th number of a draw (row-major) depends only
    on the key and on i, so the first n numbers of a draw of size 2^⌈log₂ n⌉ are the draw of n numbers:
    draws of up to ``SHARED_DRAW_MAX`` (2²⁰) numbers are taken that way, and cut, reshaped and scaled in
    NumPy (one IEEE product in ``dtype``, as JAX's ``x * scale`` with a Python float) and handed to JAX with
    ``jax.device_put``, which compiles nothing (``jnp.asarray`` and an eager ``* scale`` each compile one
    program per shape).  Larger draws, draws inside a trace (a key under ``jit``/``vmap``) and the
    non-partitionable generator call ``jax.random.normal`` itself.

    Args:
        key: a JAX PRNG key (new-style or legacy uint32[2]).
        shape: the shape of the draw.
        dtype: a floating dtype; ``None`` gives ``jax.random.normal``'s default (float32, float64 with x64).
        scale: a real number multiplying the draw (a standard deviation), taken as a Python float: the
            product stays in ``dtype`` (JAX's ``x * float(scale)``); 1 leaves the draw as it is.

    Returns:
        An array of ``shape`` and ``dtype`` equal to ``jax.random.normal(key, shape, dtype) * float(scale)``.
    """
    shape = tuple(int(s) for s in shape)
    dtype = jax.dtypes.canonicalize_dtype(float if dtype is None else dtype)
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale must be a real number, got {scale!r}")
    size = math.prod(shape)
    if (isinstance(key, jax.core.Tracer) or not jax.config.jax_threefry_partitionable
            or size == 0 or size > SHARED_DRAW_MAX):
        draw = jax.random.normal(key, shape, dtype)
        return draw if scale == 1 else draw * float(scale)
    padded = 1 << (size - 1).bit_length()
    draw = np.asarray(_normal_of_size(key, padded, dtype))[:size].reshape(shape)
    if scale != 1:
        draw = draw * np.asarray(float(scale), dtype)  # the scale rounded to dtype, as JAX's weak-typed float
    return jax.device_put(draw)
