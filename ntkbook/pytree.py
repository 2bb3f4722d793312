"""Small linear-algebra helpers on parameter pytrees.

Parameters of every model in the book are pytrees (nested dicts/lists of arrays).  The Hessian and
kernel code treats them as one flat vector w ∈ ℝ^P; these helpers do the vector-space operations
without flattening (norms, inner products, axpy, Gaussian pytrees, flat views); the ball B(w₀, R)
itself lives in :mod:`ntkbook.ball`.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _validation as V
from .random import normal

PyTree = Any


def num_params(tree: PyTree) -> int:
    """P, the total number of scalar entries."""
    return int(sum(np.prod(leaf.shape, dtype=np.int64) for leaf in jax.tree_util.tree_leaves(tree)))


def tree_dot(a: PyTree, b: PyTree) -> jax.Array:
    """⟨a, b⟩ summed over all leaves (accumulated in the leaves' dtype)."""
    parts = jax.tree_util.tree_map(lambda x, y: jnp.vdot(x, y), a, b)
    return sum(jax.tree_util.tree_leaves(parts))


def tree_norm(a: PyTree) -> jax.Array:
    """Euclidean norm ‖a‖ of the flattened pytree."""
    return jnp.sqrt(tree_dot(a, a))


def tree_max_abs(a: PyTree) -> jax.Array:
    """‖a‖_∞ of the flattened pytree."""
    return jnp.max(jnp.stack([jnp.max(jnp.abs(x)) for x in jax.tree_util.tree_leaves(a)]))


def tree_axpy(alpha: Any, x: PyTree, y: PyTree) -> PyTree:
    """y + α·x, leafwise."""
    return jax.tree_util.tree_map(lambda xi, yi: yi + alpha * xi, x, y)


def tree_sub(a: PyTree, b: PyTree) -> PyTree:
    return jax.tree_util.tree_map(jnp.subtract, a, b)


def tree_scale(alpha: Any, a: PyTree) -> PyTree:
    return jax.tree_util.tree_map(lambda x: alpha * x, a)


def tree_normal_like(key: jax.Array, tree: PyTree) -> PyTree:
    """Independent standard normal entries with the structure, shapes and dtypes of ``tree``."""
    V.pytree_of_arrays("tree", tree, finite=False)
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    keys = jax.random.split(key, len(leaves))
    new = [normal(k, x.shape, x.dtype) for k, x in zip(keys, leaves, strict=True)]
    return jax.tree_util.tree_unflatten(treedef, new)


class FlatSpec(NamedTuple):
    """Static description of a pytree, enough to flatten and unflatten it inside ``jit``.

    Hashable (unlike the closure returned by ``jax.flatten_util.ravel_pytree``), so functions that
    take it as a static argument are compiled once per model structure.
    """

    treedef: Any
    shapes: tuple[tuple[int, ...], ...]
    dtype: Any

    @property
    def size(self) -> int:
        return int(sum(int(np.prod(s, dtype=np.int64)) for s in self.shapes))

    def ravel(self, tree: PyTree) -> jax.Array:
        """The leaves of ``tree`` flattened and concatenated, (P,) in ``dtype`` (one compiled program per
        spec: called eagerly, the reshapes, casts and the concatenation were a program per leaf)."""
        return _ravel(self, tree)

    def unravel(self, flat: jax.Array) -> PyTree:
        """The pytree of this spec from a flat (P,) vector (the inverse of :meth:`ravel`)."""
        return _unravel(self, flat)


@partial(jax.jit, static_argnums=0)
def _ravel(spec: FlatSpec, tree: PyTree) -> jax.Array:
    leaves = jax.tree_util.tree_leaves(tree)
    return jnp.concatenate([jnp.ravel(x).astype(spec.dtype) for x in leaves])


@partial(jax.jit, static_argnums=0)
def _unravel(spec: FlatSpec, flat: jax.Array) -> PyTree:
    sizes = [int(np.prod(s, dtype=np.int64)) for s in spec.shapes]
    splits = np.cumsum(sizes)[:-1].tolist()
    parts = jnp.split(flat, splits)
    leaves = [p.reshape(s) for p, s in zip(parts, spec.shapes, strict=True)]
    return jax.tree_util.tree_unflatten(spec.treedef, leaves)


def flat_spec(tree: PyTree) -> FlatSpec:
    """The :class:`FlatSpec` of ``tree``; all leaves are promoted to one common floating dtype."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    dtype = jnp.result_type(*[x.dtype for x in leaves])
    return FlatSpec(treedef, tuple(tuple(x.shape) for x in leaves), jnp.dtype(dtype))
