"""The ball B(w₀, R) = {w : ‖w − w₀‖ ≤ R} in parameter space, and its sphere ‖w − w₀‖ = R.

The papers' statements hold *in a ball* around the initialization (Liu–Zhu–Belkin 2020, Theorem 3.2 and
Proposition 2.3; Liu–Zhu–Belkin 2022, Theorem 4; Oymak–Soltanolkotabi 2020, Lemma 6.9), and the book measures
them on points of the ball: random points, the best point an ascent finds, and the points of a segment.

* :func:`random_direction`, :func:`point_on_sphere`, :func:`point_in_ball` — uniform random points;
* :func:`project` — the Euclidean projection onto the ball (or the radial one onto the sphere);
* :func:`projected_ascent` — **the** projected gradient ascent of the book: a local maximizer of a
  function over the ball or the sphere, hence a *lower* estimate of its supremum there;
* :func:`sup_on_segment` — a function on the segment [w₀, w₁] at grid points, with a *certified upper*
  bound of its supremum from a Lipschitz constant in t.

Points are pytrees of arrays (any model's parameters); the distances are the Euclidean norm of all
parameters together (``ntkbook.pytree.tree_norm``).  Everything is usable inside ``jit`` and ``vmap``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _validation as V
from .pytree import num_params, tree_axpy, tree_norm, tree_normal_like, tree_scale, tree_sub

PyTree = Any
Array = jax.Array


def random_direction(key: Array, tree: PyTree) -> PyTree:
    """A direction uniformly distributed on the unit sphere of ℝ^P (P = num_params(tree)), shaped like ``tree``."""
    g = tree_normal_like(key, tree)
    return tree_scale(1.0 / tree_norm(g), g)


def point_on_sphere(key: Array, center: PyTree, radius: Any) -> PyTree:
    """A uniformly random point with ‖w − center‖ = radius."""
    if not V.is_tracer(radius):
        radius = V.positive_float("radius", radius, allow_zero=True)
    return tree_axpy(radius, random_direction(key, center), center)


def point_in_ball(key: Array, center: PyTree, radius: Any) -> PyTree:
    """A uniformly random point of the ball B(center, radius) ⊂ ℝ^P.

    The radius is R·U^{1/P} with U uniform on (0, 1); in high dimension almost all the volume is
    near the sphere, so for large P this is close to :func:`point_on_sphere`.
    """
    if not V.is_tracer(radius):
        radius = V.positive_float("radius", radius, allow_zero=True)
    k_dir, k_rad = jax.random.split(key)
    r = radius * jax.random.uniform(k_rad) ** (1.0 / num_params(center))
    return tree_axpy(r, random_direction(k_dir, center), center)


def project(params: PyTree, center: PyTree, radius: Any, *, sphere: bool = False) -> PyTree:
    """The Euclidean projection of ``params`` onto the ball B(center, radius), or with ``sphere=True`` the
    radial projection center + R·(w − center)/‖w − center‖ onto its sphere (``center`` itself stays).

    Usable inside ``jit`` (a traced ``radius`` is not validated); outside, ``radius`` must be ≥ 0.
    """
    if not V.is_tracer(radius):
        radius = V.positive_float("radius", radius, allow_zero=True)
    delta = tree_sub(params, center)
    n = tree_norm(delta)
    safe = jnp.where(n > 0, n, 1.0)
    scale = radius / safe if sphere else jnp.where(n > radius, radius / safe, 1.0)
    return tree_axpy(1.0, tree_scale(jnp.where(n > 0, scale, 0.0) if sphere else scale, delta), center)


class Ascent(NamedTuple):
    """What :func:`projected_ascent` returns.

    Attributes:
        value: the largest objective seen (start included) — a lower estimate of the supremum.
        point: where it was attained (a point of the ball, or of the sphere).
        start_value: the objective at the start.
        values: the objective at every iterate, shape (steps + 1,) (start first).
    """

    value: Array
    point: PyTree
    start_value: Array
    values: Array


def projected_ascent(
    objective: Callable[[PyTree], Array],
    start: PyTree,
    center: PyTree,
    radius: Any,
    *,
    steps: int,
    step_size: Any,
    sphere: bool = False,
    normalize: bool = False,
    decay: float = 1.0,
    value_and_grad: Callable[[PyTree], tuple[Array, PyTree]] | None = None,
) -> Ascent:
    """Projected gradient ascent of ``objective`` over B(center, R) (or its sphere): the one ascent of the book.

    From w₀ = ``start``, ``steps`` iterations of

        w ← Π( w + s_t · g(w) ),   g = ∇objective(w)  (divided by ‖g‖ when ``normalize``),  s_t = s·decay^t,

    with Π the projection of :func:`project` (onto the sphere when ``sphere``).  With ``normalize`` each step
    moves a distance s_t before the projection; ``step_size = inf`` with ``sphere`` jumps to the maximizer of the
    objective's linearization on the sphere, center + R·g/‖g‖ (then ``start`` only seeds the first gradient).
    The best iterate is kept, so the result never falls below the start: a *lower* estimate of the supremum
    over the ball, never a bound on it.  Pure JAX (``lax.fori_loop``): use it inside ``jit``/``vmap``.

    Args:
        objective: w ↦ a scalar (traceable).
        start: the first point (projected first).
        center, radius: the ball.
        steps: number of iterations ≥ 0 (a Python int).
        step_size: s > 0 (may be traced; ``inf`` only with ``sphere`` and ``normalize``).
        sphere: ascend on the sphere ‖w − center‖ = R instead of the ball.
        normalize: use the unit direction g/‖g‖.
        decay: s_t = s·decay^t (1: constant steps).
        value_and_grad: (value, gradient) of the objective, when it is cheaper than ``jax.value_and_grad``
            (e.g. an eigenvalue through the Hellmann–Feynman theorem); the gradient may be any ascent direction.

    Returns:
        an :class:`Ascent`.
    """
    steps = V.positive_int("steps", steps, minimum=0)
    vg = jax.value_and_grad(objective) if value_and_grad is None else value_and_grad
    point = project(start, center, radius, sphere=sphere)
    value0, grad0 = vg(point)
    infinite = not V.is_tracer(step_size) and np.isinf(step_size)
    if infinite and not (sphere and normalize):
        raise ValueError("step_size = inf needs sphere=True and normalize=True (a jump to center + R·g/‖g‖)")

    def body(t, carry):
        w, grad, best, best_w, values = carry
        g = tree_scale(1.0 / jnp.maximum(tree_norm(grad), 1e-30), grad) if normalize else grad
        if infinite:
            new = tree_axpy(radius, g, center)
        else:
            new = project(tree_axpy(step_size * decay**t, g, w), center, radius, sphere=sphere)
        new_value, new_grad = vg(new)
        better = new_value > best
        best_w = jax.tree_util.tree_map(lambda a, b: jnp.where(better, a, b), new, best_w)
        return new, new_grad, jnp.where(better, new_value, best), best_w, values.at[t + 1].set(new_value)

    values = jnp.full((steps + 1,), jnp.nan, jnp.result_type(value0)).at[0].set(value0)
    _, _, best, best_w, values = jax.lax.fori_loop(0, steps, body, (point, grad0, value0, point, values))
    return Ascent(value=best, point=best_w, start_value=value0, values=values)


class SegmentSup(NamedTuple):
    """What :func:`sup_on_segment` returns.

    Attributes:
        values: the function at the grid points t_k = k/(points − 1), shape (points,) (+ the function's shape).
        grid_max: the largest of them (a lower estimate of the supremum).
        upper: grid_max + lipschitz·h/2 with h = 1/(points − 1): a certified upper bound of the supremum
            over the whole segment (every t is within h/2 of a grid point), or NaN without ``lipschitz``.
    """

    values: Array
    grid_max: Array
    upper: Array


def sup_on_segment(fn: Callable[[PyTree], Array], start: PyTree, end: PyTree, *, points: int,
                   lipschitz: Any = None) -> SegmentSup:
    """The supremum of φ(t) = fn(start + t·(end − start)) over t ∈ [0, 1], from ``points`` equally spaced t.

    With ``lipschitz`` L ≥ sup|φ'(t)| (a bound the caller derives for its function, e.g. from the
    activation's constants), sup_t φ ≤ max_k φ(t_k) + L·h/2: certified, not estimated.  The points are
    evaluated with ``lax.map`` (one at a time: the memory of one evaluation).

    Args:
        fn: a point of the segment ↦ a scalar or an array (the maxima are taken per entry).
        start, end: the segment's ends (pytrees of the same structure).
        points: number of grid points ≥ 2 (a Python int).
        lipschitz: a bound on |φ'| (scalar or per entry), or None.
    """
    points = V.positive_int("points", points, minimum=2)
    delta = tree_sub(end, start)
    ts = jnp.linspace(0.0, 1.0, points, dtype=jnp.result_type(*jax.tree_util.tree_leaves(start)))
    values = jax.lax.map(lambda t: fn(tree_axpy(t, delta, start)), ts)
    grid_max = jnp.max(values, axis=0)
    upper = jnp.nan if lipschitz is None else grid_max + lipschitz * 0.5 / (points - 1)
    return SegmentSup(values=values, grid_max=grid_max, upper=jnp.asarray(upper, grid_max.dtype))


__all__ = [
    "Ascent",
    "SegmentSup",
    "point_in_ball",
    "point_on_sphere",
    "project",
    "projected_ascent",
    "random_direction",
    "sup_on_segment",
]
