"""Shared fixtures: float64 helpers and reference implementations independent of ntkbook; and the test
processes' garbage-collector setting (:func:`pytest_collection_finish`)."""

from __future__ import annotations

import gc

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree


@pytest.fixture
def x64():
    """Run the test body in 64-bit mode (references need float64 to test 1e-10 agreement)."""
    with jax.enable_x64(True):
        yield


def reference_jacobian(apply_fn, params, x):
    """Jacobian (n·k, P) by forward mode on the raveled parameters — independent of kernels.py."""
    flat, unravel = ravel_pytree(params)
    # one compiled program per call (run eagerly, each operation of the model compiled on its own)
    jac = jax.jit(jax.jacfwd(lambda w: jnp.atleast_2d(apply_fn(unravel(w), x).reshape(x.shape[0], -1))))(flat)
    return np.asarray(jac).reshape(-1, flat.size)  # rows ordered (i, a)


def numpy_mlp(params, x, activation, use_bias=False, fixed_v=None):
    """An MLP forward pass written directly in NumPy (float64), for model tests."""
    a = np.asarray(x, dtype=np.float64)
    for layer in params["layers"]:
        w = np.asarray(layer["W"], dtype=np.float64)
        a_pre = a @ w.T / np.sqrt(w.shape[1])
        if use_bias:
            a_pre = a_pre + np.asarray(layer["b"], dtype=np.float64)
        a = activation(a_pre)
    v = np.asarray(params["v"] if fixed_v is None else fixed_v, dtype=np.float64)
    f = a @ v / np.sqrt(a.shape[1])
    return f[:, 0] if f.shape[1] == 1 else f


def pytest_collection_finish(session):
    """Python's cyclic garbage collector, set for a process that traces and compiles thousands of small JAX
    programs: what is alive once the tests are collected (JAX, SciPy, the test modules) is moved out of the
    collector's reach (``gc.freeze``) and the youngest generation is collected every 10 000 allocations instead
    of 700.  Measured on ``tests/test_kernels.py`` and ``tests/test_training.py`` in one process (2026-11-28, a
    ``gc.callbacks`` timer): 2.73 s in 1562 collections before, 1.26 s in 423 after, of about 90 CPU-s.  The test
    processes only; the chapters' kernels keep Python's defaults."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 20, 100)


def small_network(kind, seed=0, width=5, depth=3, d=3, activation="tanh", **kw):
    """An MLP or ResNet of ``width`` × ``depth`` (float64) and one unit-scale input (the Hessian tests)."""
    from ntkbook import models
    from ntkbook.data.sphere import unit_scale_input
    from ntkbook.models.resnet import resnet

    key = jax.random.key(seed)
    if kind == "resnet":
        model, params = resnet(key, width, depth, input_dim=d, activation=activation, dtype=jnp.float64, **kw)
    else:
        widths = width if isinstance(width, tuple) else (width,) * depth
        model, params = models.mlp(key, widths, input_dim=d, activation=activation, dtype=jnp.float64, **kw)
    x = unit_scale_input(jax.random.key(seed + 50), d, jnp.float64)
    return model, params, x
