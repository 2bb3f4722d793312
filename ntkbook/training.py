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
from .eigen import lambda_max

Array = jax.Array
PyTree = Any


def square_loss(apply_fn: Callable[[PyTree, Array], Array], params: PyTree, x: Array, y: Array) -> Array:
    """L(w) = (1/2n) Σ_i ‖f(w; x_i) − y_i‖²."""
    r = apply_fn(params, x) - y
    return 0.5 * jnp.sum(r * r) / x.shape[0]


def _same_rows(x: Array, y: Array) -> None:
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"y must have one row per input: x has {x.shape[0]} rows, y has shape {tuple(y.shape)}")


def step_size_from_kernel(kernel: Any, n: int, *, factor: float = 1.0) -> float:
    """η = factor · n / λ_max(K) for the square loss (stability limit: factor < 2).

    ``kernel`` is the (n, n) — or flattened (n·k, n·k) — tangent kernel at initialization.
    """
    k = V.numpy_array("kernel", kernel, ndim=2)
    factor = V.positive_float("factor", factor)
    n = V.positive_int("n", n)
    lam = float(lambda_max(k))  # dense, symmetrized, float64 (ntkbook.eigen)
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
    _same_rows(x, y)
    lr = V.positive_float("lr", lr)
    steps = V.positive_int("steps", steps)
    return _gd_path(apply_fn, params, x, y, lr, steps)


# ---------------------------------------------------------------------------------------------
# Several runs at once, tracking the kernel change inside the compiled loop
# ---------------------------------------------------------------------------------------------

LOSSES = ("square", "cross_entropy")


def loss_value(apply_fn: Callable[[PyTree, Array], Array], params: PyTree, x: Array, y: Array, loss: str) -> Array:
    """``"square"``: (1/2n) Σ‖f − y‖²; ``"cross_entropy"``: −(1/n) Σ_i Σ_c y_ic log softmax(f(x_i))_c
    (f are logits, y one-hot or probabilities)."""
    V.choice("loss", loss, LOSSES)
    f = apply_fn(params, x)
    if loss == "square":
        r = f - y
        return 0.5 * jnp.sum(r * r) / x.shape[0]
    return -jnp.sum(y * jax.nn.log_softmax(f, axis=-1)) / x.shape[0]


def record_schedule(max_steps: int, *, per_decade: int = 12) -> np.ndarray:
    """Steps 0, 1, 2, … at which to measure: log-spaced, ``per_decade`` points per factor 10, plus
    every step below ``per_decade`` and the last one (sorted, unique)."""
    max_steps = V.positive_int("max_steps", max_steps)
    per_decade = V.positive_int("per_decade", per_decade)
    decades = np.log10(max(max_steps, 1))
    logspaced = np.round(np.logspace(0, decades, int(np.ceil(decades * per_decade)) + 1)).astype(np.int64)
    return np.unique(np.concatenate([np.arange(min(per_decade, max_steps) + 1), logspaced, [max_steps]]))


def gd_with_kernel_tracking(
    apply_fn: Callable[[PyTree, Array], Array],
    params: PyTree,
    x: Any,
    y: Any,
    *,
    lr: Any,
    max_steps: int,
    loss: str = "square",
    loss_tol: float = 0.0,
    record_steps: Any = None,
    track: dict[str, Callable[[PyTree, Array], Array]] | None = None,
) -> dict[str, Any]:
    """Full-batch gradient descent for several runs at once, with the kernel change measured in the loop.

    Args:
        apply_fn: the model trained, ``apply_fn(params, x)``.
        params: parameters of R runs stacked on a leading axis (e.g. ``jax.vmap(init)(keys)``).
        x, y: the training set, shared by the runs: (n, d) and (n,) or (n, k).
        lr: step size, a scalar or one per run (R,).
        max_steps: the step cap.
        loss: ``"square"`` or ``"cross_entropy"`` (see :func:`loss_value`).
        loss_tol: a run stops (its parameters freeze) once its loss is below this.
        record_steps: sorted steps at which the kernels are measured (default :func:`record_schedule`);
            the kernel is also measured when each run stops.
        track: name → output map whose tangent kernel is tracked (default: ``{"model": apply_fn}``),
            e.g. the logits and the softmax of the same network.

    Returns a dict of arrays: ``record_steps`` (S,), ``loss`` (R, S) at those steps (NaN once a run has
    stopped), ``change`` {name: (R, S)} with ‖K(w_t) − K(w₀)‖_F / ‖K(w₀)‖_F on the flattened (n·k × n·k)
    kernel, ``final_change`` {name: (R,)} at the stopping step, ``sup_change`` {name: (R,)} (max over
    all measurements), ``steps`` (R,) taken, ``final_loss`` (R,), ``params`` (final, stacked).

    The loop counter is shared by the runs, so the kernels are computed only at the recorded steps
    (a ``lax.cond`` on an unbatched predicate), never at every step.  Memory: two kernels per run
    and per tracked map at a time.
    """
    V.callable_("apply_fn", apply_fn)
    V.pytree_of_arrays("params", params)
    V.choice("loss", loss, LOSSES)
    x = V.array("x", x)
    y = V.array("y", y)
    _same_rows(x, y)
    max_steps = V.positive_int("max_steps", max_steps)
    leading = {leaf.shape[0] if leaf.ndim else None for leaf in jax.tree_util.tree_leaves(params)}
    if len(leading) != 1 or None in leading:
        raise ValueError("params must stack the runs on a leading axis of the same length in every leaf "
                         "(e.g. jax.vmap(init)(keys)); for one run use a leading axis of length 1")
    runs = leading.pop()
    lr_arr = np.asarray(lr, dtype=np.float64)
    if lr_arr.ndim > 1 or (lr_arr.ndim == 1 and lr_arr.shape[0] != runs) or not np.all(np.isfinite(lr_arr)) \
            or np.any(lr_arr <= 0):
        raise ValueError(f"lr must be a positive step size or one per run ({runs},), got {lr!r}")
    lr = jnp.broadcast_to(jnp.asarray(lr_arr, jax.tree_util.tree_leaves(params)[0].dtype), (runs,))
    steps_np = record_schedule(max_steps) if record_steps is None else np.unique(np.asarray(record_steps, np.int64))
    if steps_np.size == 0 or steps_np[0] < 0 or steps_np[-1] > max_steps:
        raise ValueError(f"record_steps must lie in [0, max_steps={max_steps}]")
    track = {"model": apply_fn} if track is None else dict(track)
    for name, fn in track.items():
        V.callable_(f"track[{name!r}]", fn)

    result = _tracked_loop(apply_fn, tuple(track.items()), params, x, y, lr, jnp.asarray(steps_np), max_steps, loss,
                           float(loss_tol))
    out = jax.tree_util.tree_map(np.asarray, result)
    out["record_steps"] = steps_np
    return out


def _as_4d(k: Array) -> Array:
    return k[:, :, None, None] if k.ndim == 2 else k


@partial(jax.jit, static_argnames=("apply_fn", "track", "max_steps", "loss", "loss_tol"))
def _tracked_loop(apply_fn, track, params, x, y, lr, record_steps, max_steps, loss, loss_tol):
    from .kernels import empirical_ntk, flatten_ntk

    def kernels(p: PyTree) -> dict[str, Array]:
        return {name: flatten_ntk(_as_4d(empirical_ntk(fn, p, x))) for name, fn in track}

    n_rec = record_steps.shape[0]
    names = [name for name, _ in track]
    value_and_grad = jax.value_and_grad(lambda p: loss_value(apply_fn, p, x, y, loss))
    k0 = jax.vmap(kernels)(params)  # {name: (R, nk, nk)}
    norms0 = {k: jnp.linalg.norm(v, axis=(1, 2)) for k, v in k0.items()}

    def changes(p):
        kt = jax.vmap(kernels)(p)
        return {k: jnp.linalg.norm(kt[k] - k0[k], axis=(1, 2)) / norms0[k] for k in names}

    runs = lr.shape[0]
    nan = jnp.full((runs, n_rec), jnp.nan, lr.dtype)
    state = {
        "t": jnp.asarray(0), "ptr": jnp.asarray(0), "params": params,
        "loss": jax.vmap(lambda p: loss_value(apply_fn, p, x, y, loss))(params),
        "done": jnp.zeros((runs,), bool), "steps": jnp.zeros((runs,), jnp.int32),
        "loss_rec": nan, "change": {k: nan for k in names},
        "final_change": {k: jnp.zeros((runs,), lr.dtype) for k in names},
    }

    def record(s):
        ch = changes(s["params"])
        live = ~s["done"]
        s = dict(s)
        s["loss_rec"] = s["loss_rec"].at[:, s["ptr"]].set(jnp.where(live, s["loss"], jnp.nan))
        s["change"] = {k: s["change"][k].at[:, s["ptr"]].set(jnp.where(live, ch[k], jnp.nan)) for k in names}
        s["ptr"] = s["ptr"] + 1
        return s

    def stop_check(s):
        newly = (~s["done"]) & ((s["loss"] < loss_tol) | (s["t"] >= max_steps))

        def freeze(s):
            ch = changes(s["params"])
            s = dict(s)
            s["final_change"] = {k: jnp.where(newly, ch[k], s["final_change"][k]) for k in names}
            s["steps"] = jnp.where(newly, s["t"], s["steps"])
            s["done"] = s["done"] | newly
            return s

        return jax.lax.cond(jnp.any(newly), freeze, lambda s: s, s)

    def body(s):
        s = jax.lax.cond((s["ptr"] < n_rec) & (record_steps[jnp.minimum(s["ptr"], n_rec - 1)] == s["t"]),
                         record, lambda s: s, s)
        s = stop_check(s)
        _, grads = jax.vmap(value_and_grad)(s["params"])
        live = ~s["done"]
        new_params = jax.tree_util.tree_map(
            lambda p, g: jnp.where(live.reshape((-1,) + (1,) * (p.ndim - 1)),
                                   p - lr.reshape((-1,) + (1,) * (p.ndim - 1)) * g, p), s["params"], grads)
        s = dict(s)
        s["params"] = new_params
        s["loss"] = jax.vmap(lambda p: loss_value(apply_fn, p, x, y, loss))(new_params)
        s["t"] = s["t"] + 1
        return s

    def cond(s):
        return ~jnp.all(s["done"])

    s = jax.lax.while_loop(cond, body, state)
    sup = {k: jnp.maximum(jnp.nanmax(jnp.where(jnp.isnan(s["change"][k]), -jnp.inf, s["change"][k]), axis=1),
                          s["final_change"][k]) for k in names}
    return {"loss": s["loss_rec"], "change": s["change"], "final_change": s["final_change"], "sup_change": sup,
            "steps": s["steps"], "final_loss": s["loss"], "params": s["params"]}
