"""Helpers shared by every architecture: input validation, NTK-scaled dense products, pytree metadata,
one model object per architecture (:func:`shared_model`)."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from .. import _validation as V

Array = jax.Array
PyTree = Any
HIGHEST = jax.lax.Precision.HIGHEST

STATIC = dict(static=True)
"""``dataclasses.field(metadata=STATIC)`` marks a configuration field (not a pytree leaf)."""


def inputs(x: Any, input_dim: int) -> Array:
    """Validate inputs and return them as ``(n, d)`` (a model with d = 1 also accepts ``(n,)``)."""
    x = V.array("x", x, ndim=(1, 2))
    if x.ndim == 1:
        if input_dim != 1:
            raise ValueError(f"x must have shape (n, {input_dim}); got shape {tuple(x.shape)}")
        x = x[:, None]
    if x.shape[1] != input_dim:
        raise ValueError(f"x must have shape (n, {input_dim}); got shape {tuple(x.shape)}")
    return x


def dense(a: Array, w: Array) -> Array:
    """a @ wᵀ / √fan_in with full float32 precision on every backend (no TF32 on GPUs)."""
    return jnp.matmul(a, w.T, precision=HIGHEST) / math.sqrt(w.shape[1])


def squeeze_output(f: Array) -> Array:
    """(n, 1) → (n,); (n, k) unchanged for k > 1."""
    return f[:, 0] if f.shape[-1] == 1 else f


_MODELS: dict[Any, Any] = {}


def shared_model(model: Any) -> Any:
    """One model object per architecture.

    A model without array leaves (MLP, ResNet, DenseNet, ...) is fully described by its pytree structure
    (its static fields) but compares by identity, and ``model.apply`` is part of the static key of the
    compiled training loop (:func:`ntkbook.training.train`).  Passing every network of one architecture
    (seeds, runs, data sets) through this function hands them the same object, so that loop compiles once
    per architecture instead of once per network drawn.  A model with array leaves is returned unchanged.
    """
    if jax.tree_util.tree_leaves(model):
        return model
    return _MODELS.setdefault(jax.tree_util.tree_structure(model), model)
