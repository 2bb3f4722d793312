"""Spreading independent runs over all visible JAX devices.

The experiments stack R independent runs (seeds) on a leading axis and ``vmap`` over it.  With
several devices, :func:`shard_runs` places that axis across them (a one-dimensional mesh named
``"runs"``); a function compiled with ``jit`` then runs each device's share of the runs where its
data lives (GSPMD propagates the sharding through ``vmap``, ``while_loop`` and ``cond``), and the
results come back with the same leading axis.  R is padded to a multiple of the number of devices
by repeating the last run; :func:`unpad` drops the copies.  With one device nothing changes.

The padded runs compute exactly what the run they copy computes, so a run that finishes late is
not delayed by them, and the loop of :func:`ntkbook.training.train` stops when every run, copies
included, has stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _validation as V

PyTree = Any


def num_devices(devices: Sequence[Any] | None = None) -> int:
    """How many devices the runs are spread over (all visible devices by default)."""
    return len(jax.devices() if devices is None else devices)


def padded_size(runs: int, devices: Sequence[Any] | None = None) -> int:
    """The smallest multiple of the device count that is ≥ ``runs``."""
    runs = V.positive_int("runs", runs)
    d = num_devices(devices)
    return -(-runs // d) * d


def _leading(tree: PyTree) -> int:
    leaves = jax.tree_util.tree_leaves(tree)
    if not leaves:
        raise ValueError("tree must contain at least one array")
    sizes = {int(np.shape(leaf)[0]) if np.ndim(leaf) else -1 for leaf in leaves}
    if len(sizes) != 1 or -1 in sizes:
        raise ValueError(f"every leaf must have the same leading (runs) axis, got sizes {sorted(sizes)}")
    return sizes.pop()


def shard_runs(tree: PyTree, devices: Sequence[Any] | None = None) -> tuple[PyTree, int]:
    """Pad the leading axis of every leaf to a multiple of the device count and shard it.

    Args:
        tree: a pytree of arrays that all have the same leading axis R (runs).
        devices: the devices to use (default: all visible devices).

    Returns:
        ``(sharded, R)``: the padded tree (leading axis :func:`padded_size`) placed with a
        ``NamedSharding`` over a ``("runs",)`` mesh, and the original R for :func:`unpad`.
        With one device the tree is returned unchanged.
    """
    runs = _leading(tree)
    devices = list(jax.devices() if devices is None else devices)
    if len(devices) == 1:
        return tree, runs
    size = padded_size(runs, devices)

    def pad(leaf):
        leaf = jnp.asarray(leaf)
        if size == runs:
            return leaf
        extra = jnp.repeat(leaf[-1:], size - runs, axis=0)
        return jnp.concatenate([leaf, extra], axis=0)

    mesh = jax.sharding.Mesh(np.asarray(devices), ("runs",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("runs"))
    return jax.device_put(jax.tree_util.tree_map(pad, tree), sharding), runs


def unpad(tree: PyTree, runs: int) -> PyTree:
    """Keep the first ``runs`` entries of the leading axis of every leaf (NumPy arrays out).

    Every leaf must have a leading runs axis: take per-run entries out of a result dict before
    calling this (e.g. not its ``record_steps``).
    """
    runs = V.positive_int("runs", runs)

    def cut(leaf):
        arr = np.asarray(leaf)
        if arr.ndim == 0 or arr.shape[0] < runs:
            raise ValueError(f"every leaf must have a leading axis of at least {runs} runs, got shape {arr.shape}")
        return arr[:runs]

    return jax.tree_util.tree_map(cut, tree)
