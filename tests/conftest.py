"""Shared fixtures: float64 helpers and reference implementations independent of ntkbook."""

from __future__ import annotations

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
