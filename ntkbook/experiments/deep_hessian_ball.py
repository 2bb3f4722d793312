"""Chapter 3, second part — the Hessian in a ball around the initialization (Liu, Zhu & Belkin 2020,
Theorems 3.2–3.3, Section 3.3.3, Remarks 3.4–3.5, Apps. F–G of Liu–Zhu–Belkin 2020).

* :func:`ball_sweep` — Theorem 3.2: ‖H(W)‖ at W₀, at random points of spheres ‖W − W₀‖ = R, along a
  gradient-descent path and at the worst point found by projected ascent of the top eigenvalue inside
  the ball (:func:`ntkbook.hessian.ascend_hessian_norm`), with the tangent kernel K_{(x,x)} at the same
  points, across widths; the path is :func:`gd_checkpoints` (the one training loop, a few iterates kept);
* :func:`min_width_sweep` — Theorem 3.3: hidden layers of different widths, one layer narrowed at a time;
* :func:`architecture_sweep` — the CNN of Eq. 90–93 (width = channels) and the ResNet of Eq. 97;
* :func:`activation_sweep` — tanh, sigmoid, softplus; :func:`relu_versus_smooth` — ReLU, whose
  autodiff Hessian misses the Dirac masses of σ'' (:func:`segment_defect`).

All Hessian norms come from :func:`ntkbook.hessian_spectral_norm` with ``operator="auto"`` and ARPACK
(exact range compression for MLPs/ResNets, Hessian-vector products on all parameters for CNNs).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validation as V
from ..data import digits
from ..data.sphere import unit_scale_input
from ..eigen import lambda_max
from ..hessian import ascend_hessian_norm, at_input, hessian_spectral_norm
from ..hessian_compressed import kernel_at_input, single_input
from ..kernels import empirical_ntk
from ..layer_norms import layer_factors
from ..models import mlp, shared_model
from ..models.conv import conv_net
from ..models.resnet import resnet
from ..progress import progress
from ..pytree import random_direction, tree_axpy, tree_norm, tree_sub
from ..random import fold_key
from ..scales import Activations3, CnnResnet, Relu3, Thm32, Thm33
from ..training import distance_from_start, iterate, train

Array = jax.Array
PyTree = Any


# ---------------------------------------------------------------------------------------------
# Theorem 3.2: the ball
# ---------------------------------------------------------------------------------------------


@jax.jit
def _sphere_point_jit(key, center, radius):
    return tree_axpy(radius, random_direction(key, center), center)


def _sphere_point(key: Array, center: PyTree, radius: float) -> PyTree:
    """A uniform random point of the sphere ‖W − center‖ = radius (compiled once per network shape)."""
    return _sphere_point_jit(key, center, jnp.asarray(radius, jax.tree_util.tree_leaves(center)[0].dtype))


def _training_data(key: Array, n: int, d: int) -> tuple[Array, Array]:
    """n inputs with ‖x_i‖ = √d and labels y_i = sin(β·x_i) (a smooth Θ(1) target, β fixed)."""
    kx, kb = jax.random.split(key)
    xs = jnp.stack([unit_scale_input(k, d) for k in jax.random.split(kx, n)])
    beta = jax.random.normal(kb, (d,)) / math.sqrt(d)
    return xs, jnp.sin(2.0 * xs @ beta)


def gd_checkpoints(model: Any, params: PyTree, x: Any, y: Any, *, lr: float, steps: int,
                   checkpoints: int) -> dict[str, Any]:
    """Full-batch gradient descent on L(W) = (1/2n)Σ(f(W; x_i) − y_i)² (:func:`ntkbook.training.train`), keeping
    a few iterates only (memory O(checkpoints · P)).

    Returns:
        dict with ``losses`` (steps,) (loss before each step), ``distances`` (steps,) (‖W_{t+1} − W₀‖),
        ``points`` (list of the ``checkpoints`` iterates W_t at t = steps·j/checkpoints, j = 1..), ``times``,
        ``final_loss`` (the loss after the last step).
    """
    V.pytree_of_arrays("params", params)
    x = V.array("x", x)
    y = V.array("y", y, ndim=1)
    lr = V.positive_float("lr", lr)
    steps = V.positive_int("steps", steps)
    checkpoints = V.positive_int("checkpoints", checkpoints)
    if steps % checkpoints:
        raise ValueError(f"steps ({steps}) must be a multiple of checkpoints ({checkpoints})")
    times = [steps // checkpoints * (j + 1) for j in range(checkpoints)]
    run = train(shared_model(model).apply, params, x, y, lr=lr, stop=steps, record_steps=np.arange(steps + 1),
                track={"distance": distance_from_start(), "point": iterate(steps=tuple(times))})
    points = [jax.tree_util.tree_map(lambda a, j=j: jnp.asarray(a[j]), run.tracked["point"])
              for j in range(checkpoints)]
    return {"losses": run.losses[:-1], "distances": run.tracked["distance"][1:], "points": points,
            "times": times, "final_loss": float(run.loss)}


def ball_piece(model: Any, params0: PyTree, xs: Array, ys: Array, settings: Thm32,
               key: Array) -> dict[str, Any]:
    """All measurements of Theorem 3.2 for one network; the Hessian is that of f(·; x) at x = ``xs[0]``.

    Returns a dict with ``h0`` and ``k0`` (‖H‖ and K_{(x,x)} at W₀); per radius R: ``sphere`` (list of
    ‖H‖ at random points of the sphere), ``ascent`` (best ‖H‖ of :func:`ntkbook.hessian.ascend_hessian_norm`, started
    from the maximizer found in the previous radius — the balls are nested, radii increasing),
    ``ascent_distance``, ``ascent_kernel``; along gradient descent: ``gd_hessian`` (‖H‖ at the
    checkpoints), ``gd_kernel``, ``gd_distance`` (‖W_t − W₀‖ at the checkpoints), ``gd_max_distance``,
    ``gd_loss`` (initial and final loss), ``products`` (Hessian-vector products used in total).
    """
    x = xs[0]
    tol = settings.tol
    h0 = hessian_spectral_norm(at_input(model.apply, x), params0, operator="auto", method="arpack", tol=tol)
    out: dict[str, Any] = {"h0": h0.value, "k0": kernel_at_input(model, params0, x), "products": h0.products,
                           "radii": list(settings.radii)}
    out["sphere"], out["ascent"], out["ascent_distance"], out["ascent_kernel"] = [], [], [], []
    best_point = params0
    if list(settings.radii) != sorted(settings.radii):
        raise ValueError(f"radii must be increasing, got {settings.radii}")
    for r in settings.radii:
        vals = []
        for i in range(settings.sphere_points):
            p = _sphere_point(fold_key(key, float(r), i), params0, float(r))
            h = hessian_spectral_norm(at_input(model.apply, x), p, operator="auto", method="arpack", tol=tol,
                                      start=h0.eigenvector)
            vals.append(h.value)
            out["products"] += h.products
        out["sphere"].append(vals)
        # the balls are nested: start from the maximizer found in the previous (smaller) ball
        asc = ascend_hessian_norm(model, params0, x, float(r), steps=settings.ascent_steps, tol=tol,
                                  start=best_point)
        best_point = asc["params"]
        out["ascent"].append(asc["value"])
        out["ascent_distance"].append(asc["distance"])
        out["ascent_kernel"].append(asc["kernel"])
        out["products"] += asc["products"]
    k = np.asarray(empirical_ntk(model.apply, params0, xs), np.float64)  # structured (MLP and ResNet)
    # η = n/λ_max(K): half the stability limit 2n/λ_max(K) of GD on L = (1/2n)Σ(f − y)² (linearized)
    lr = xs.shape[0] / float(lambda_max(k))
    gd = gd_checkpoints(model, params0, xs, ys, lr=lr, steps=settings.gd_steps,
                        checkpoints=settings.gd_checkpoints)
    gh, gk, start = [], [], h0.eigenvector
    for p in gd["points"]:
        h = hessian_spectral_norm(at_input(model.apply, x), p, operator="auto", method="arpack", tol=tol, start=start)
        gh.append(h.value)
        gk.append(kernel_at_input(model, p, x))
        start = h.eigenvector
        out["products"] += h.products
    out.update(gd_hessian=gh, gd_kernel=gk, gd_distance=[float(gd["distances"][t - 1]) for t in gd["times"]],
               gd_max_distance=float(np.max(gd["distances"])),
               gd_loss=[float(gd["losses"][0]), gd["final_loss"]], lr=lr)
    return out


def ball_sweep(settings: Thm32, key: Array) -> list[dict[str, Any]]:
    """Theorem 3.2 across ``widths`` × ``seeds`` for fully connected tanh networks of depth ``depth``
    (v trained, d = ``input_dim``).  One :func:`ball_piece` dict per network, plus ``width``, ``seed``,
    ``params`` (P) and ``seconds``."""
    d, L = settings.input_dim, settings.depth
    xs, ys = _training_data(jax.random.fold_in(key, 1), settings.num_train, d)
    pieces = [(m, s) for m in settings.widths for s in range(settings.seeds)]
    out = []
    for m, s in progress(pieces, desc="Thm. 3.2", total=len(pieces)):
        t0 = time.perf_counter()
        k = jax.random.fold_in(key, 1000 * s + m)
        model, p0 = mlp(k, (m,) * L, input_dim=d, activation=settings.activation)
        row = ball_piece(model, p0, xs, ys, settings, jax.random.fold_in(k, 5))
        row.update(width=m, seed=s, params=sum(x.size for x in jax.tree_util.tree_leaves(p0)),
                   seconds=time.perf_counter() - t0)
        out.append(row)
    return out


def ball_table(rows: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Flatten :func:`ball_sweep` output: per network, the max ‖H‖ over each kind of point and radius.

    Columns: ``width``, ``seed``, ``h0``, ``k0``, ``sphere_max[R]``, ``ascent[R]``, ``gd_max``,
    ``ball_max[R]`` (max over W₀, sphere, ascent and the GD checkpoints within distance R), ``gd_distance``,
    ``gd_loss_ratio`` (final/initial loss), ``k_min`` (the smallest K_{(x,x)} over W₀, the GD checkpoints
    and the ascent maximizers), ``k_max_rel_change`` (max |K/K₀ − 1| over the same points),
    ``gd_k_rel_change`` (max |K/K₀ − 1| over the GD checkpoints only: Remark 3.5's kernel along training).
    """
    radii = rows[0]["radii"]
    cols: dict[str, list] = {"width": [], "seed": [], "h0": [], "k0": [], "gd_max": [], "gd_distance": [],
                             "gd_loss_ratio": [], "k_min": [], "k_max_rel_change": [], "gd_k_rel_change": []}
    for r in radii:
        for name in ("sphere_max", "ascent", "ball_max", "ascent_distance"):
            cols[f"{name}[{r:g}]"] = []
    for row in rows:
        cols["width"].append(row["width"])
        cols["seed"].append(row["seed"])
        cols["h0"].append(row["h0"])
        cols["k0"].append(row["k0"])
        cols["gd_max"].append(max(row["gd_hessian"]))
        cols["gd_distance"].append(row["gd_max_distance"])
        cols["gd_loss_ratio"].append(row["gd_loss"][1] / row["gd_loss"][0])
        ks = np.asarray(row["gd_kernel"] + row["ascent_kernel"])
        cols["k_max_rel_change"].append(float(np.max(np.abs(ks / row["k0"] - 1))))
        cols["gd_k_rel_change"].append(float(np.max(np.abs(np.asarray(row["gd_kernel"]) / row["k0"] - 1))))
        cols["k_min"].append(float(min(row["k0"], *ks)))
        for j, r in enumerate(radii):
            inside = [h for h, dist in zip(row["gd_hessian"], row["gd_distance"], strict=True) if dist <= r]
            cols[f"sphere_max[{r:g}]"].append(max(row["sphere"][j]) if row["sphere"][j] else np.nan)
            cols[f"ascent[{r:g}]"].append(row["ascent"][j])
            cols[f"ascent_distance[{r:g}]"].append(row["ascent_distance"][j])
            cols[f"ball_max[{r:g}]"].append(max([row["h0"], *row["sphere"][j], row["ascent"][j], *inside]))
    return {k: np.asarray(v, dtype=np.float64) for k, v in cols.items()}


# ---------------------------------------------------------------------------------------------
# Theorem 3.3: different widths
# ---------------------------------------------------------------------------------------------


def min_width_sweep(settings: Thm33, key: Array) -> dict[str, np.ndarray]:
    """‖H(W₀)‖ for depth-``depth`` tanh networks in which one hidden layer (``layer``) has width m_j ∈
    ``narrow`` and every other layer has width ``base``; also the uniform network of width m_j.

    Rows: ``layer`` (1-based; 0 for the uniform network), ``narrow`` (m_j), ``min_width``,
    ``seed``, ``hessian``, ``kernel``.
    """
    d, L, base = settings.input_dim, settings.depth, settings.base
    x = unit_scale_input(jax.random.fold_in(key, 7), d)
    cases = [(j, m) for j in range(L + 1) for m in settings.narrow]
    pieces = [(j, m, s) for j, m in cases for s in range(settings.seeds)]
    rows: dict[str, list] = {k: [] for k in ("layer", "narrow", "min_width", "seed", "hessian", "kernel")}
    for j, m, s in progress(pieces, desc="Thm. 3.3", total=len(pieces)):
        widths = tuple(m for _ in range(L)) if j == 0 else tuple(m if i == j - 1 else base for i in range(L))
        model, p = mlp(fold_key(key, j, s, m), widths, input_dim=d,
                       activation=settings.activation)
        h = hessian_spectral_norm(at_input(model.apply, x), p, operator="auto", method="arpack", tol=settings.tol)
        for k_, v in zip(rows, (j, m, min(widths), s, h.value, kernel_at_input(model, p, x)), strict=True):
            rows[k_].append(v)
    return {k: np.asarray(v) for k, v in rows.items()}


# ---------------------------------------------------------------------------------------------
# Section 3.3.3: CNN and ResNet; activations
# ---------------------------------------------------------------------------------------------


def architecture_sweep(settings: CnnResnet, key: Array) -> dict[str, np.ndarray]:
    """‖H‖ at W₀ and at one random point of the sphere ‖W − W₀‖ = ``radius`` for a CNN (``cnn_widths``
    channels, ``cnn_depth`` 3 × 3 convolutional layers on an 8 × 8 digit image) and a ResNet
    (``resnet_widths``, ``resnet_depth`` layers, input in ℝ^``input_dim``), ``seeds`` each.

    Rows: ``architecture`` ("cnn"/"resnet"), ``width``, ``seed``, ``params`` (P), ``h0``, ``h_sphere``,
    ``kernel`` (K at W₀; ResNet only, NaN for the CNN), ``iterations``.
    """
    img = jnp.asarray(digits.image(settings.image))
    xr = unit_scale_input(jax.random.fold_in(key, 7), settings.input_dim)
    rows: dict[str, list] = {k: [] for k in ("architecture", "width", "seed", "params", "h0", "h_sphere", "kernel",
                                             "iterations")}
    cases = [("cnn", m) for m in settings.cnn_widths] + [("resnet", m) for m in settings.resnet_widths]
    pieces = [(a, m, s) for a, m in cases for s in range(settings.seeds)]
    for arch, m, s in progress(pieces, desc="CNN/ResNet", total=len(pieces)):
        k = jax.random.fold_in(key, 1000 * s + m + (0 if arch == "cnn" else 500_000))
        if arch == "cnn":
            model, p = conv_net(k, (m,) * settings.cnn_depth, spatial=img.shape, kernel_size=3)
            x = img
        else:
            model, p = resnet(k, m, settings.resnet_depth, input_dim=settings.input_dim)
            x = xr
        h0 = hessian_spectral_norm(at_input(model.apply, x), p, operator="auto", method="arpack", tol=settings.tol)
        q = _sphere_point(jax.random.fold_in(k, 3), p, float(settings.radius))
        h1 = hessian_spectral_norm(at_input(model.apply, x), q, operator="auto", method="arpack", tol=settings.tol,
                                   start=h0.eigenvector)
        size = sum(a.size for a in jax.tree_util.tree_leaves(p))
        vals = (arch, m, s, size, h0.value, h1.value, kernel_at_input(model, p, x), h0.products + h1.products)
        for k_, v in zip(rows, vals, strict=True):
            rows[k_].append(v)
    return {k: np.asarray(v) for k, v in rows.items()}


def activation_sweep(settings: Activations3, key: Array) -> dict[str, np.ndarray]:
    """‖H‖ at W₀ and the best of a short ascent in the ball of radius ``radius`` for depth-``depth``
    networks with each activation in ``activations`` over ``widths`` (seeds ``seeds``).

    Rows: ``activation``, ``width``, ``seed``, ``h0``, ``ascent``, ``kernel``, ``L_phi`` (max_l ‖J_α⁽ˡ⁾‖
    at W₀, exact).
    """
    d, L = settings.input_dim, settings.depth
    x = unit_scale_input(jax.random.fold_in(key, 7), d)
    pieces = [(a, m, s) for a in settings.activations for m in settings.widths for s in range(settings.seeds)]
    rows: dict[str, list] = {k: [] for k in ("activation", "width", "seed", "h0", "ascent", "kernel", "L_phi")}
    for act, m, s in progress(pieces, desc="activations", total=len(pieces)):
        model, p = mlp(jax.random.fold_in(key, 1000 * s + m), (m,) * L, input_dim=d, activation=act)
        h0 = hessian_spectral_norm(at_input(model.apply, x), p, operator="auto", method="arpack", tol=settings.tol)
        asc = ascend_hessian_norm(model, p, x, float(settings.radius), steps=settings.ascent_steps,
                                  tol=settings.tol)
        f = layer_factors(model, p, x) if m <= settings.factor_max_width else None
        lphi = float(np.nanmax(f["ja"])) if f is not None else np.nan
        for k_, v in zip(rows, (act, m, s, h0.value, asc["value"], kernel_at_input(model, p, x), lphi), strict=True):
            rows[k_].append(v)
    return {k: np.asarray(v) for k, v in rows.items()}


@jax.jit
def _grad_and_hvps(model, params, x, direction, ts):
    """∇_W f at ``params`` and at ``params + direction``, and H(params + t·direction)·direction for t in ts."""
    f = lambda p: model.apply(p, x[None])[0]  # noqa: E731
    g = jax.grad(f)
    end = tree_axpy(1.0, direction, params)

    def hvp_at(t):
        return jax.jvp(g, (tree_axpy(t, direction, params),), (direction,))[1]

    return g(params), g(end), jax.lax.map(hvp_at, ts)


def segment_defect(model: Any, params0: PyTree, params1: PyTree, x: Any, *, nodes: int = 16) -> dict[str, float]:
    """How well the (autodiff) Hessian accounts for the change of the gradient along [W₀, W₁].

    If ∇f is absolutely continuous on the segment, ∇f(W₁) − ∇f(W₀) = ∫₀¹ H(W₀ + tΔ)Δ dt (the identity
    behind Proposition 2.3).  The integral is computed with ``nodes``-point Gauss–Legendre quadrature.
    Returns ``defect`` = ‖∇f(W₁) − ∇f(W₀) − ∫HΔ‖/‖∇f(W₁) − ∇f(W₀)‖ (≈ 0 for smooth activations; O(1) for
    ReLU, whose σ'' has Dirac masses that autodiff does not see) and ``kernel_change``
    |K(W₁) − K(W₀)|/K(W₀) with K = ‖∇f‖².
    """
    nodes = V.positive_int("nodes", nodes)
    x = single_input(model, x)
    t, w = np.polynomial.legendre.leggauss(nodes)
    dtype = jax.tree_util.tree_leaves(params0)[0].dtype
    ts, ws = jnp.asarray((t + 1) / 2, dtype), (w / 2)
    delta = tree_sub(params1, params0)
    g0, g1, hv = _grad_and_hvps(model, params0, x, delta, ts)
    integral = jax.tree_util.tree_map(lambda h: jnp.tensordot(jnp.asarray(ws, dtype), h, axes=1), hv)
    change = tree_sub(g1, g0)
    k0, k1 = float(tree_norm(g0) ** 2), float(tree_norm(g1) ** 2)
    return {"defect": float(tree_norm(tree_sub(change, integral)) / tree_norm(change)),
            "kernel_change": abs(k1 - k0) / k0, "gradient_change": float(tree_norm(change))}


def relu_versus_smooth(settings: Relu3, key: Array) -> dict[str, np.ndarray]:
    """Smooth activations against ReLU on segments [W₀, W₀ + Ru] (u a random unit direction), depth
    ``depth``, v trained, over ``widths`` × ``seeds`` × ``activations``.

    Rows: ``activation``, ``width``, ``seed``, ``hessian`` (autodiff ‖H(W₀)‖; for ReLU only the
    layer-coupling and output blocks survive since σ'' = 0 a.e.), ``defect`` and ``kernel_change`` of
    :func:`segment_defect`.
    """
    d, L, r = settings.input_dim, settings.depth, float(settings.radius)
    x = unit_scale_input(jax.random.fold_in(key, 7), d)
    rows: dict[str, list] = {k: [] for k in ("activation", "width", "seed", "hessian", "defect", "kernel_change")}
    pieces = [(a, m, s) for a in settings.activations for m in settings.widths for s in range(settings.seeds)]
    for act, m, s in progress(pieces, desc="ReLU vs smooth", total=len(pieces)):
        k = jax.random.fold_in(key, 1000 * s + m)
        model, p0 = mlp(k, (m,) * L, input_dim=d, activation=act)
        p1 = tree_axpy(r, random_direction(jax.random.fold_in(k, 1), p0), p0)
        h0 = hessian_spectral_norm(at_input(model.apply, x), p0, operator="auto", method="arpack", tol=settings.tol)
        seg = segment_defect(model, p0, p1, x, nodes=settings.nodes)
        for k_, v in zip(rows, (act, m, s, h0.value, seg["defect"], seg["kernel_change"]), strict=True):
            rows[k_].append(v)
    return {k: np.asarray(v) for k, v in rows.items()}


__all__ = [
    "activation_sweep",
    "architecture_sweep",
    "ball_piece",
    "ball_sweep",
    "ball_table",
    "gd_checkpoints",
    "min_width_sweep",
    "relu_versus_smooth",
    "segment_defect",
]

