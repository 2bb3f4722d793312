"""Full-batch gradient descent, compiled end to end (``lax.scan``), recording the path.

The square loss of the papers, L(w) = (1/2n) Σ_i (f(w; x_i) − y_i)², and a step size chosen from the
tangent kernel: for the linearized model, gradient descent on L is stable iff η < 2n/λ_max(K), and
:func:`step_size_from_kernel` returns η = c · n / λ_max(K) with c = 1 by default (half the limit).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _validation as V

Array = jax.Array
PyTree = Any


def square_loss(apply_fn: Callable[[PyTree, Array], Array], params: PyTree, x: Array, y: Array) -> Array:
    """L(w) = (1/2n) Σ_i ‖f(w; x_i) − y_i‖²."""
    r = apply_fn(params, x) - y
    return 0.5 * jnp.sum(r * r) / x.shape[0]


def step_size_from_kernel(kernel: Any, n: int, *, factor: float = 1.0) -> float:
    """η = factor · n / λ_max(K) for the square loss (stability limit: factor < 2).

    ``kernel`` is the (n, n) — or flattened (n·k, n·k) — tangent kernel at initialization.
    """
    k = V.numpy_array("kernel", kernel, ndim=2)
    factor = V.positive_float("factor", factor)
    n = V.positive_int("n", n)
    lam = float(np.linalg.eigvalsh(0.5 * (k + k.T))[-1])
    if lam <= 0:
        raise ValueError("kernel has no positive eigenvalue: the model does not move under gradient descent")
    return factor * n / lam


@partial(jax.jit, static_argnames=("apply_fn", "steps"))
def _gd_path(apply_fn, params, x, y, lr, steps):
    loss = partial(square_loss, apply_fn)

    def step(p, _):
        value, grad = jax.value_and_grad(loss)(p, x, y)
        p_next = jax.tree_util.tree_map(lambda a, g: a - lr * g, p, grad)
        return p_next, (p_next, value)

    _, (path, losses) = jax.lax.scan(step, params, None, length=steps)
    first = jax.tree_util.tree_map(lambda a: a[None], params)
    path = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), first, path)
    final = loss(jax.tree_util.tree_map(lambda a: a[-1], path), x, y)
    return path, jnp.concatenate([losses, final[None]])


def gradient_descent_path(
    apply_fn: Callable[[PyTree, Array], Array],
    params: PyTree,
    x: Any,
    y: Any,
    *,
    lr: float,
    steps: int,
) -> tuple[PyTree, Array]:
    """Run ``steps`` full-batch GD steps on the square loss and keep every iterate.

    Returns:
        ``(path, losses)``: ``path`` has the structure of ``params`` with a leading axis of length
        steps + 1 (w₀ ... w_steps); ``losses[t] = L(w_t)``.  Memory O(steps · P): for short paths.
    """
    V.callable_("apply_fn", apply_fn)
    V.pytree_of_arrays("params", params)
    x = V.array("x", x)
    y = V.array("y", y)
    lr = V.positive_float("lr", lr)
    steps = V.positive_int("steps", steps)
    return _gd_path(apply_fn, params, x, y, lr, steps)
