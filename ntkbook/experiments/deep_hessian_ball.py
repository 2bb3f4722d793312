"""Chapter 3, second part — the Hessian in a ball around the initialization (Liu, Zhu & Belkin 2020,
Theorems 3.2–3.3, Section 3.3.3, Remarks 3.4–3.5, Apps. F–G of Liu–Zhu–Belkin 2020).

* :func:`ball_sweep` — Theorem 3.2: ‖H(W)‖ at W₀, at random points of spheres ‖W − W₀‖ = R, along a
  gradient-descent path and at the worst point found by projected ascent of the top eigenvalue inside
  the ball (:func:`ntkbook.hessian.ascend_hessian_norm`), with the tangent kernel K_{(x,x)} at the same
  points, across widths; the path is :func:`gd_checkpoints` (the one training loop, a few iterates kept);
* :func:`min_width_sweep` — Theorem 3.3: hidden layers of different widths, one layer narrowed at a time;
* :func:`architecture_sweep` — the CNN of Eq. 90–93 (width = channels) and the ResNet of Eq. 97;
  :func:`architecture_layer_norms` — the same networks layer by layer (Lemmas G.2–G.5 of App. G: the spectral norms
  of the weights, every kernel slice W^[k] of Eq. 92 for the CNN, and the hidden-layer norms, at W₀ and on a
  sphere ‖W − W₀‖ = R), with the bounds of :func:`hidden_norm_bounds`;
* :func:`activation_sweep` — tanh, sigmoid, softplus; :func:`relu_versus_smooth` — ReLU, whose
  autodiff Hessian misses the Dirac masses of σ'' (:func:`segment_defect`).

All Hessian norms come from :func:`ntkbook.hessian_spectral_norm` with ``operator="auto"`` and ARPACK
(exact range compression for MLPs/ResNets, Hessian-vector products on all parameters for CNNs).
"""

from __future__ import annotations

import functools
import math
import numbers
import time
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from matplotlib.figure import Figure
from threadpoolctl import ThreadpoolController

from .. import _validation as V
from .. import plotting
from ..ball import random_direction
from ..data import digits
from ..data.sphere import unit_scale_input
from ..eigen import lambda_max
from ..hessian import ascend_hessian_norm, at_input, hessian_spectral_norm
from ..hessian_bounds import lemma_f3_bounds
from ..hessian_compressed import base_pass, kernel_at_input, single_input
from ..kernels import empirical_ntk
from ..layer_norms import largest_singular_value, layer_factors
from ..models import mlp, shared_model
from ..models.conv import ConvNet, conv_net
from ..models.resnet import ResNet, resnet
from ..progress import progress
from ..pytree import tree_axpy, tree_norm, tree_sub
from ..random import fold_key
from ..scales import Activations3, CnnResnet, Relu3, Thm32, Thm33
from ..tables import Table, fit_cells, order_fit, show
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


def _architecture_pieces(settings: CnnResnet) -> list[tuple[str, int, int]]:
    """(architecture, width, seed) of every network of :func:`architecture_sweep`, in its order."""
    cases = [("cnn", m) for m in settings.cnn_widths] + [("resnet", m) for m in settings.resnet_widths]
    return [(a, m, s) for a, m in cases for s in range(settings.seeds)]


def _architecture_network(settings: CnnResnet, key: Array, arch: str, m: int,
                          s: int) -> tuple[Array, Any, PyTree, Array]:
    """``(network key, model, W₀, input)`` of one network of :func:`architecture_sweep` (float32, as drawn there):
    the CNN of ``cnn_depth`` 3 × 3 layers on digit ``image``, or the ResNet on an input with ‖x‖ = √d."""
    k = jax.random.fold_in(key, 1000 * s + m + (0 if arch == "cnn" else 500_000))
    if arch == "cnn":
        img = jnp.asarray(digits.image(settings.image))
        model, p = conv_net(k, (m,) * settings.cnn_depth, spatial=img.shape, kernel_size=3)
        return k, model, p, img
    model, p = resnet(k, m, settings.resnet_depth, input_dim=settings.input_dim)
    return k, model, p, unit_scale_input(jax.random.fold_in(key, 7), settings.input_dim)


def architecture_sweep(settings: CnnResnet, key: Array) -> dict[str, np.ndarray]:
    """‖H‖ at W₀ and at one random point of the sphere ‖W − W₀‖ = ``radius`` for a CNN (``cnn_widths``
    channels, ``cnn_depth`` 3 × 3 convolutional layers on an 8 × 8 digit image) and a ResNet
    (``resnet_widths``, ``resnet_depth`` layers, input in ℝ^``input_dim``), ``seeds`` each.

    Rows: ``architecture`` ("cnn"/"resnet"), ``width``, ``seed``, ``params`` (P), ``h0``, ``h_sphere``,
    ``kernel`` (K at W₀; ResNet only, NaN for the CNN), ``iterations``.
    """
    rows: dict[str, list] = {k: [] for k in ("architecture", "width", "seed", "params", "h0", "h_sphere", "kernel",
                                             "iterations")}
    for arch, m, s in progress(_architecture_pieces(settings), desc="CNN/ResNet"):
        k, model, p, x = _architecture_network(settings, key, arch, m, s)
        h0 = hessian_spectral_norm(at_input(model.apply, x), p, operator="auto", method="arpack", tol=settings.tol)
        q = _sphere_point(jax.random.fold_in(k, 3), p, float(settings.radius))
        h1 = hessian_spectral_norm(at_input(model.apply, x), q, operator="auto", method="arpack", tol=settings.tol,
                                   start=h0.eigenvector)
        size = sum(a.size for a in jax.tree_util.tree_leaves(p))
        vals = (arch, m, s, size, h0.value, h1.value, kernel_at_input(model, p, x), h0.products + h1.products)
        for k_, v in zip(rows, vals, strict=True):
            rows[k_].append(v)
    return {k: np.asarray(v) for k, v in rows.items()}


# ---------------------------------------------------------------------------------------------
# App. G layer by layer: the weights (Lemmas G.2, G.4) and hidden layers (Lemmas G.3, G.5) in the ball
# ---------------------------------------------------------------------------------------------

GAUSSIAN_C0 = 3.0
"""c₀ of Lemma F.1's Gaussian-matrix argument, used for Lemmas G.2 and G.4: an m₁ × m₂ matrix of independent
N(0, 1) entries has ‖W₀‖ ≤ √m₁ + √m₂ + t except with probability 2e^{−t²/2}; with m₁, m₂ ≤ m and t = √m,
‖W₀‖ ≤ 3√m with probability at least 1 − 2e^{−m/2}."""

APP_G_LEMMAS: dict[tuple[str, str], tuple[str, str]] = {
    ("cnn", "weight"): ("Lemma G.2", "Eq. 94"), ("cnn", "hidden"): ("Lemma G.3", "Eq. 95"),
    ("resnet", "weight"): ("Lemma G.4", "Eq. 98"), ("resnet", "hidden"): ("Lemma G.5", "Eq. 99")}
"""(architecture, quantity) of :func:`architecture_layer_norms` → the lemma of App. G of Liu–Zhu–Belkin 2020
(main-text numbers) it measures and the equation that states its order in m: weights in the ball (Lemmas G.2,
G.4), hidden layers in the ball (Lemmas G.3, G.5)."""


def kernel_slices(w: Any) -> np.ndarray:
    """The matrices W^[k] of Eq. 92 of one convolutional layer, float64, shape (K, m_out, m_in).

    ``w`` holds the filters of :func:`ntkbook.models.conv.conv`, shape ``(*kernel, m_in, m_out)``; the kernel
    positions k are taken in C order (K = the product of the kernel sizes) and (W^[k])_{ij} = W_{k,i,j} with i an
    output and j an input channel, so that W ∗ α = Σ_k W^[k] α^[k] with α^[k] the input shifted by position k.

    Raises:
        TypeError: if ``w`` is not a floating array.
        ValueError: if it has fewer than 3 dimensions or non-finite entries.
    """
    w = V.numpy_array("w", w)
    if w.ndim < 3:
        raise ValueError(f"w must have shape (*kernel, m_in, m_out) with at least one kernel dimension, "
                         f"got {w.shape}")
    return np.swapaxes(w.reshape(-1, w.shape[-2], w.shape[-1]), 1, 2)


@jax.jit
def _conv_hidden(model: ConvNet, params: PyTree, x: Array) -> list[Array]:
    """α⁽¹⁾, …, α⁽ᴸ⁾ of the CNN's forward pass (compiled once per network shape and dtype)."""
    return model.forward(params, x).post[1:]


def _spectral_norm(a: np.ndarray) -> float:
    """‖a‖ (largest singular value) of a float64 matrix, through its smaller Gram matrix.

    On one BLAS thread: these matrices are small (n ≤ a few thousand), and on a busy CPU (make test runs three
    processes on two cores) a multi-threaded dense eigensolver of n = 512 was measured 50 times slower than a
    single-threaded one, its threads waiting for each other."""
    with _thread_pools().limit(limits=1, user_api="blas"):
        return largest_singular_value(a if a.shape[1] <= a.shape[0] else a.T)


def _float64_tree(tree: PyTree) -> PyTree:
    """``tree`` with every leaf a float64 NumPy array (leaves that already are one are not copied)."""
    return jax.tree_util.tree_map(lambda a: np.asarray(a, np.float64), tree)


@functools.cache
def _thread_pools() -> ThreadpoolController:
    """The process's BLAS/OpenMP thread pools (found once: looking them up costs milliseconds)."""
    return ThreadpoolController()


def layer_norms_at(model: ConvNet | ResNet, params: PyTree, x: Any) -> dict[str, Any]:
    """The quantities of Lemmas G.2–G.5 at one point ``params`` and one input ``x``, all in float64.

    Args:
        model: a :class:`~ntkbook.models.conv.ConvNet` (Eq. 90–93) or a :class:`~ntkbook.models.resnet.ResNet`
            (Eq. 97), without a fixed output layer for the ResNet.
        params: its parameters (any float dtype; cast to float64).
        x: one input — an image of shape ``model.spatial`` (+ channels) for the CNN, a vector (d,) for the ResNet.

    Returns:
        ``weights``: one float64 array per weight layer of spectral norms — CNN: layers 1..L, each (K,) with
        ‖W^[k]‖ of every kernel slice (:func:`kernel_slices`; m × m for l ≥ 2, m × c at the input layer);
        ResNet: layers 1..L+1 (``v`` last, as W⁽ᴸ⁺¹⁾ in Lemma G.4), each (1,) with ‖W⁽ˡ⁾‖.
        ``hidden``: (L,) ‖α⁽ˡ⁾‖ — the Frobenius norm of the m × Q image for the CNN (Eq. 95), from the model's
        forward pass in float64; the 2-norm for the ResNet (Eq. 99), from the float64 NumPy pass
        :func:`ntkbook.hessian_compressed.base_pass`.

    Raises:
        TypeError: if ``model`` is neither a ConvNet nor a ResNet, or ``params``/``x`` are not floating arrays.
        ValueError: if the ResNet's output layer is fixed, or ``x`` has the wrong shape.
    """
    if not isinstance(model, (ConvNet, ResNet)):
        raise TypeError(f"model must be a ConvNet or a ResNet, got {type(model).__name__}")
    V.pytree_of_arrays("params", params)
    x64 = V.numpy_array("x", x)
    p64 = _float64_tree(params)
    if isinstance(model, ResNet):
        if model.fixed_v is not None:
            raise ValueError("model: Lemma G.4 includes the output layer v; use a ResNet with a trained v")
        weights = [np.array([_spectral_norm(layer["W"])]) for layer in p64["layers"]] + [
            np.array([_spectral_norm(p64["v"])])]
        with jax.enable_x64(True):
            bp = base_pass(model, p64, x64)
        hidden = [*bp.inputs[1:], bp.last]
    else:
        weights = [np.array([_spectral_norm(s) for s in kernel_slices(layer["W"])]) for layer in p64["layers"]]
        with jax.enable_x64(True):
            hidden = _conv_hidden(model, jax.tree_util.tree_map(jnp.asarray, p64), jnp.asarray(x64)[None])
    return {"weights": weights, "hidden": np.array([float(np.linalg.norm(np.asarray(a))) for a in hidden])}


def hidden_norm_bounds(architecture: str, depth: int, width: int, c0: float, radius: float, lipschitz: float,
                       c_x: float, sigma0: float, *, kernel_positions: int = 1,
                       pixels: int = 1) -> dict[str, np.ndarray]:
    """Bounds on ‖α⁽ˡ⁾(W)‖, l = 1..``depth``, for ‖W − W₀‖ ≤ R, ‖W₀ slice‖ ≤ c₀√m and ``|x_i| ≤ C_x``, shape (depth,).

    Every bound is the recursion of :func:`~ntkbook.hessian_bounds.lemma_f3_bounds` (the corrected one), B₁ = a·C_x + o,
    B_l = s·B_{l−1} + o, from ‖σ(z)‖ ≤ 𝖫_σ‖z‖ + √n|σ(0)| for z ∈ ℝⁿ
    and ‖W⁽ˡ⁾‖ ≤ ‖W₀⁽ˡ⁾‖ + ‖W⁽ˡ⁾ − W₀⁽ˡ⁾‖_F ≤ c₀√m + R, with q = c₀ + R/√m:

    * ``fc`` — Lemma F.3 with the fully connected constants (Eq. 66 with the factor √m on the σ(0) sum, the
      correction of chapter 3): a = 𝖫_σq√m, s = 𝖫_σq, o = √m|σ(0)|;
    * ``derived`` for ``architecture="cnn"`` (Lemma G.3; the book's CNN divides by the fan-in √(K m_{l−1})): the
      K kernel slices enter through Lemma G.1, ‖Σ_k W^[k]α^[k]‖_F ≤ Σ_k ‖W^[k]‖‖α‖_F ≤ (Kc₀√m + √K R)‖α‖_F,
      and the m × Q image has √(Qm) entries: with q_K = √K c₀ + R/√m, a = 𝖫_σq_K√(Qm), s = 𝖫_σq_K,
      o = √(Qm)|σ(0)| (for the input layer ‖x‖_F ≤ √(Qc) C_x with c input channels);
    * ``derived`` for ``architecture="resnet"`` (Lemma G.5): α⁽ˡ⁾ = σ(α̃⁽ˡ⁾) + α⁽ˡ⁻¹⁾ adds the skip term, so
      s = 1 + 𝖫_σq (layer 1 has no skip: a = 𝖫_σq√m, o = √m|σ(0)|).

    Args:
        architecture: ``"cnn"`` or ``"resnet"``.
        depth, width: L and m.
        c0, radius, lipschitz, c_x, sigma0: c₀, R ≥ 0, 𝖫_σ, C_x and σ(0).
        kernel_positions, pixels: K and Q (CNN only; 1 for the ResNet).

    Returns:
        ``{"fc": (depth,), "derived": (depth,)}``.

    Raises:
        ValueError: for an unknown architecture, non-positive sizes or constants, or K, Q ≠ 1 for the ResNet.
        TypeError: for a ``sigma0`` that is not a real number.
    """
    architecture = V.choice("architecture", architecture, ARCHITECTURES)
    depth, width = V.positive_int("depth", depth), V.positive_int("width", width)
    kk, qq = V.positive_int("kernel_positions", kernel_positions), V.positive_int("pixels", pixels)
    if architecture == "resnet" and (kk, qq) != (1, 1):
        raise ValueError(f"kernel_positions and pixels are CNN sizes; the ResNet needs 1 and 1, got {kk} and {qq}")
    c0, radius = V.positive_float("c0", c0), V.positive_float("radius", radius, allow_zero=True)
    lip, c_x = V.positive_float("lipschitz", lipschitz), V.positive_float("c_x", c_x, allow_zero=True)
    if isinstance(sigma0, bool) or not isinstance(sigma0, numbers.Real):
        raise TypeError(f"sigma0 must be a real number, got {sigma0!r} of type {type(sigma0).__name__}")
    if not math.isfinite(sigma0):
        raise ValueError(f"sigma0 must be finite, got {sigma0}")
    fc = lemma_f3_bounds(depth, width, c0, radius, lip, c_x, sigma0)["corrected"]
    if architecture == "cnn":
        rk, rq = math.sqrt(kk), math.sqrt(qq)
        derived = lemma_f3_bounds(depth, width, rk * c0, radius, lip, rq * c_x, rq * sigma0)["corrected"]
    else:
        derived = lemma_f3_bounds(depth, width, c0, radius, lip, c_x, sigma0, skip=True)["corrected"]
    return {"fc": fc, "derived": derived}


def architecture_layer_norms(settings: CnnResnet, key: Array, *, sphere_points: int = 2) -> dict[str, np.ndarray]:
    """Lemmas G.2–G.5 layer by layer for the networks of :func:`architecture_sweep` (same ``settings``, ``key``,
    widths, seeds and initializations W₀), at W₀ and at ``sphere_points`` random points of the sphere
    ‖W − W₀‖ = ``radius`` (the first is the point where :func:`architecture_sweep` measures ‖H‖; drawn in
    float32 like W₀, so the distance ``radius`` recorded is the float64 ‖W − W₀‖, R up to float32 rounding).

    Per network: c₀ = the largest ‖W₀ slice‖/√m (CNN: every kernel slice of every layer; ResNet: W⁽¹⁾..W⁽ᴸ⁾
    and v), so Assumption F.1 holds exactly; ``C_x = max_i |x_i|``; 𝖫_σ and σ(0) of the model's activation.  One
    row per (network, point, quantity, layer, slice) for the section's input (``input`` = "x": the digit image /
    the vector with ‖x‖ = √d); for the CNN also the hidden layers at W₀ for the constant image x = 𝟙
    (``input`` = "ones", C_x = 1).

    Returns equal-length arrays: ``architecture``, ``input``, ``width``, ``seed``, ``point`` (0 = W₀),
    ``radius`` (0 at W₀), ``quantity`` ("weight" | "hidden"), ``layer`` (1-based; the ResNet's v is layer L+1),
    ``slice`` (kernel position k, 0-based; 0 for the ResNet and for hidden layers), ``norm`` (‖W^[k]‖, ‖W⁽ˡ⁾‖ or
    ‖α⁽ˡ⁾‖), ``scaled`` (norm/√m), ``bound`` (weights: c₀√m + r with :data:`GAUSSIAN_C0`; hidden layers: the
    ``derived`` bound of :func:`hidden_norm_bounds`), ``fc`` (hidden layers: Lemma F.3 with the fully connected
    constants; NaN for weights), ``c0``, ``c_x``.
    """
    V.instance("settings", settings, CnnResnet)
    sphere_points = V.positive_int("sphere_points", sphere_points, minimum=0)
    r = float(settings.radius)
    if r <= 0:
        raise ValueError(f"settings.radius must be > 0, got {r}")
    cols = ("architecture", "input", "width", "seed", "point", "radius", "quantity", "layer", "slice", "norm",
            "scaled", "bound", "fc", "c0", "c_x")
    rows: dict[str, list] = {k: [] for k in cols}

    def add(**values: Any) -> None:
        for k_ in cols:
            rows[k_].append(values[k_])

    for arch, m, s in progress(_architecture_pieces(settings), desc="App. G layer norms"):
        k, model, p0, x = _architecture_network(settings, key, arch, m, s)
        act = model.activations[0]
        lip, sigma0 = float(act.lipschitz), float(act.numpy(np.zeros(1))[0])
        sizes = {"kernel_positions": math.prod(model.kernel_size), "pixels": model.pixels} if arch == "cnn" else {}
        points = [(0.0, _float64_tree(p0))]
        for i in range(sphere_points):  # i = 0: the sphere point of architecture_sweep
            p = _float64_tree(_sphere_point(jax.random.fold_in(k, 3) if i == 0 else fold_key(k, "lemma-g", i),
                                            p0, r))
            dist = math.sqrt(sum(float(np.sum((a - b) ** 2)) for a, b in zip(
                jax.tree_util.tree_leaves(p), jax.tree_util.tree_leaves(points[0][1]), strict=True)))
            points.append((dist, p))
        inputs = [("x", np.asarray(x, np.float64))] + ([("ones", np.ones(x.shape))] if arch == "cnn" else [])
        c0 = None
        for j, (radius, p) in enumerate(points):
            for name, xi in inputs:
                if name == "ones" and j > 0:
                    continue
                got = layer_norms_at(model, p, xi)
                if c0 is None:  # at W₀: the constant of Assumption F.1 for this network
                    c0 = max(float(w.max()) for w in got["weights"]) / math.sqrt(m)
                c_x = float(np.max(np.abs(xi)))
                base = {"architecture": arch, "input": name, "width": m, "seed": s, "point": j, "radius": radius,
                        "c0": c0, "c_x": c_x}
                if name == "x":
                    for layer, norms in enumerate(got["weights"], start=1):
                        for sl, val in enumerate(norms):
                            add(**base, quantity="weight", layer=layer, slice=sl, norm=float(val),
                                scaled=float(val) / math.sqrt(m), bound=GAUSSIAN_C0 * math.sqrt(m) + radius, fc=np.nan)
                bnd = hidden_norm_bounds(arch, model.depth, m, c0, radius, lip, c_x, sigma0, **sizes)
                for layer, val in enumerate(got["hidden"], start=1):
                    add(**base, quantity="hidden", layer=layer, slice=0, norm=float(val),
                        scaled=float(val) / math.sqrt(m), bound=float(bnd["derived"][layer - 1]),
                        fc=float(bnd["fc"][layer - 1]))
    return {k_: np.asarray(v) for k_, v in rows.items()}


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


# ---------------------------------------------------------------------------------------------
# The chapter's tables and figures, and the quantities its checks assert
# ---------------------------------------------------------------------------------------------


def ball_networks_table(rows: Sequence[Mapping[str, Any]], settings: Thm32) -> Table:
    """One row per network of :func:`ball_sweep` (``rows``, run with ``settings``): ‖H‖ at W₀, the largest
    over random points of each sphere, the ascent's best point in each ball, the largest along gradient
    descent (and how far it went), K(W₀) and the seconds the network took.

    Raises:
        TypeError: if ``rows`` is not a sequence of mappings or ``settings`` not a ``Thm32``.
        ValueError: if a row lacks a key of :func:`ball_piece`.
    """
    V.instance("settings", settings, Thm32)
    V.records("rows", rows, ("width", "params", "h0", "sphere", "ascent", "gd_hessian", "gd_max_distance", "k0",
                             "seconds"))
    radii = list(settings.radii)
    data = [{"m": int(r["width"]), "P": r["params"], "‖H(W0)‖": r["h0"],
             **{f"sphere R={R:g}": max(sph) for R, sph in zip(radii, r["sphere"], strict=True)},
             **{f"ascent R={R:g}": a for R, a in zip(radii, r["ascent"], strict=True)},
             "GD max": max(r["gd_hessian"]), "GD ‖W−W0‖": r["gd_max_distance"], "K(W0)": r["k0"],
             "seconds": r["seconds"]} for r in rows]
    return show(data, caption="‖H‖ in the ball, per network (seed): at W0, the largest over random points of "
                "each sphere, the ascent's best point in each ball, the largest along gradient descent (and how "
                "far it went), and the kernel diagonal at W0.")


def ratio_and_excess(ball: Mapping[str, np.ndarray], radius: float) -> tuple[np.ndarray, np.ndarray]:
    """``(ratio, excess)``, each of shape (networks,), from :func:`ball_table` for the ball of ``radius``:
    max_B ‖H‖ / min K (the relative curvature of Theorem 3.2; min K over W₀, the GD checkpoints and the
    ascent maximizers) and max_B ‖H‖ − ‖H(W₀)‖ (how much the ball adds to the value at W₀).

    Raises:
        TypeError: if ``ball`` is not a mapping or ``radius`` not a number.
        ValueError: if ``ball`` has no column ``ball_max[radius]`` (a radius the sweep did not use).
    """
    radius = V.positive_float("radius", radius)
    top = V.mapping("ball", ball, (f"ball_max[{radius:g}]", "k_min", "h0"))[f"ball_max[{radius:g}]"]
    return top / ball["k_min"], top - ball["h0"]


def ball_rates_table(ball: Mapping[str, np.ndarray], settings: Thm32) -> Table:
    """The fitted exponent in the width of every quantity of the ball experiment (:func:`ball_table`, one
    value per network, run with ``settings``) next to the window of its order claim
    (:func:`ntkbook.tables.order_fit`).

    Raises:
        TypeError: if ``settings`` is not a ``Thm32`` or ``ball`` not a mapping.
        ValueError: if ``ball`` lacks a column of :func:`ball_table`.
    """
    radii = list(V.instance("settings", settings, Thm32).radii)
    V.mapping("ball", ball, ("width", "gd_max", "k0", "gd_distance", *(f"ball_max[{R:g}]" for R in radii)))
    ratio, excess = ratio_and_excess(ball, radii[-1])
    rows = [(f"max over B(W0, {R:g}) of ‖H‖", "decay", ball[f"ball_max[{R:g}]"]) for R in radii] + [
        ("max ‖H‖ along gradient descent", "decay", ball["gd_max"]),
        ("K(x,x) at W0", "constant", ball["k0"]),
        (f"max_B ‖H‖ / min K (R = {radii[-1]:g})", "decay", ratio),
        (f"excess max_B ‖H‖ − ‖H(W0)‖ (R = {radii[-1]:g})", "decay", excess),
        ("distance travelled by gradient descent", "constant", ball["gd_distance"]),
    ]
    return show([{"quantity": name, **order_fit(ball["width"], values, expect)} for name, expect, values in rows],
                caption="Log–log slopes against the width for the ball experiment (one value per network).")


def _ball_radii(ball: Mapping[str, np.ndarray], radii: Sequence[float], *extra: str) -> list[float]:
    """``radii`` as a list, checked non-empty, and ``ball`` checked to hold the columns the figures read
    (width, h0, ``extra`` and one ball maximum per radius)."""
    radii = list(radii)
    if not radii:
        raise ValueError("radii must name at least one radius of the sweep")
    V.mapping("ball", ball, ("width", "h0", *extra, *(f"ball_max[{R:g}]" for R in radii)))
    return radii


def ball_figure(ball: Mapping[str, np.ndarray], radii: Sequence[float]) -> Figure:
    """Theorem 3.2 measured (:func:`ball_table`, columns of shape (networks,), for the ``radii`` of the
    sweep).  Left: max_B ‖H‖ per radius and ‖H(W₀)‖ against the width (slope −1/2 drawn at the largest
    radius); right: K(W₀) and max_B ‖H‖ / min K.  Returns the figure.

    Raises:
        TypeError: if ``ball`` is not a mapping.
        ValueError: if ``radii`` is empty or ``ball`` lacks one of its columns.
    """
    radii = _ball_radii(ball, radii, "k0")
    ratio, _ = ratio_and_excess(ball, radii[-1])
    fig, (ax_h, ax_k) = plotting.subplots(2, width=5.0, height=4.0)
    for R, color in zip(radii, plotting.PALETTE, strict=False):
        plotting.power_law(ax_h, ball["width"], ball[f"ball_max[{R:g}]"], label=f"R = {R:g}", color=color,
                           reference_slope=-0.5 if R == radii[-1] else None)
    plotting.power_law(ax_h, ball["width"], ball["h0"], label=r"$\mathbf{W}_0$", color="0.5", marker="s")
    plotting.label_ticks(ax_h, ball["width"])
    ax_h.set_xlabel("width $m$")
    ax_h.set_ylabel(r"$\max_{B(\mathbf{W}_0,R)}\|H\|$")
    ax_h.legend(fontsize=7)
    plotting.power_law(ax_k, ball["width"], ball["k0"], label=r"$K_{(x,x)}(\mathbf{W}_0)$", reference_slope=0.0)
    plotting.power_law(ax_k, ball["width"], ratio, label=r"$\max_B\|H\|/\min K$", reference_slope=-0.5,
                       reference_label="slope −1/2")
    plotting.label_ticks(ax_k, ball["width"])
    ax_k.set_xlabel("width $m$")
    ax_k.legend(fontsize=7)
    return fig


def excess_figure(ball: Mapping[str, np.ndarray], radii: Sequence[float]) -> Figure:
    """√m (max_B ‖H‖ − ‖H(W₀)‖) of :func:`ball_table` against the radius (``radii``: those of the sweep),
    one line per width (geometric means over seeds), with a line of slope 1.  Returns the figure.

    Raises:
        TypeError: if ``ball`` is not a mapping.
        ValueError: if ``radii`` is empty or ``ball`` lacks one of its columns.
    """
    radii = _ball_radii(ball, radii)
    fig, ax = plotting.subplots(1, width=5.5, height=4.0)
    for m, color in zip(np.unique(ball["width"]), plotting.PALETTE * 3, strict=False):
        sel = ball["width"] == m
        ex = [np.exp(np.mean(np.log(ball[f"ball_max[{R:g}]"][sel] - ball["h0"][sel] + 1e-12))) for R in radii]
        ax.plot(radii, np.sqrt(m) * np.asarray(ex), "o-", color=color, label=f"m = {int(m)}")
    grid_r = np.geomspace(min(radii), max(radii), 20)
    ax.plot(grid_r, grid_r * 0.5, ":", color="0.3", label="slope 1")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plotting.label_ticks(ax, radii)
    ax.set_xlabel("radius $R$")
    ax.set_ylabel(r"$\sqrt{m}\,(\max_B\|H\|-\|H(\mathbf{W}_0)\|)$")
    ax.legend(fontsize=7, ncol=2)
    return fig


def narrowed_labels(depth: int) -> dict[int, str]:
    """The ``layer`` index of :func:`min_width_sweep` → what was narrowed: 0 → all layers (a uniform
    network of width m_j), j = 1..``depth`` → hidden layer j only.  ``depth`` ≥ 1 (``ValueError`` /
    ``TypeError`` otherwise)."""
    depth = V.positive_int("depth", depth)
    return {0: "all layers (uniform)", **{j: f"layer {j} only" for j in range(1, depth + 1)}}


def min_width_table(mw: Mapping[str, np.ndarray], settings: Thm33) -> Table:
    """Per narrowed layer of :func:`min_width_sweep` (columns of shape (runs,), run with ``settings``): the
    median ‖H(W₀)‖ at each m_j and the fitted exponent in m_j with its 95% interval
    (:func:`ntkbook.tables.fit_cells`).

    Raises:
        TypeError: if ``settings`` is not a ``Thm33`` or ``mw`` not a mapping.
        ValueError: if ``mw`` lacks a column ``layer``, ``narrow`` or ``hessian``.
    """
    V.instance("settings", settings, Thm33)
    V.mapping("mw", mw, ("layer", "narrow", "hessian"))
    rows = []
    for j, name in narrowed_labels(settings.depth).items():
        sel = mw["layer"] == j
        rows.append({"narrowed": name,
                     **{f"m_j={m}": float(np.median(mw["hessian"][sel & (mw["narrow"] == m)]))
                        for m in settings.narrow},
                     **fit_cells(mw["narrow"][sel], mw["hessian"][sel])})
    return show(rows, caption=f"Median ‖H(W0)‖ when one hidden layer has width m_j and the others {settings.base}, "
                "and for uniform networks of width m_j; log–log slope against m_j.")


def min_width_figure(mw: Mapping[str, np.ndarray], depth: int) -> Figure:
    """‖H(W₀)‖ of :func:`min_width_sweep` (networks of depth ``depth``) against m_j, one power law per
    narrowed layer (slope −1/2 drawn for the uniform networks).  Returns the figure.

    Raises:
        TypeError: if ``mw`` is not a mapping.
        ValueError: if ``mw`` lacks a column ``layer``, ``narrow`` or ``hessian``, or ``depth`` < 1.
    """
    V.mapping("mw", mw, ("layer", "narrow", "hessian"))
    fig, ax = plotting.subplots(1, width=5.5, height=4.0)
    for (j, name), color in zip(narrowed_labels(depth).items(), plotting.PALETTE, strict=False):
        sel = mw["layer"] == j
        plotting.power_law(ax, mw["narrow"][sel], mw["hessian"][sel], label=name, color=color,
                           reference_slope=-0.5 if j == 0 else None)
    plotting.label_ticks(ax, mw["narrow"])
    ax.set_xlabel("width of the narrow layer(s) $m_j$")
    ax.set_ylabel(r"$\|H(\mathbf{W}_0)\|$")
    ax.legend(fontsize=7)
    return fig


ARCHITECTURES = {"cnn": "CNN", "resnet": "ResNet"}
"""The ``architecture`` values of :func:`architecture_sweep` and their names."""


def architecture_hessian(arch: Mapping[str, np.ndarray]) -> np.ndarray:
    """max(‖H(W₀)‖, ‖H‖ at the point of the sphere) per run of :func:`architecture_sweep`, shape (runs,):
    the quantity whose decay in the width App. G asserts.

    Raises:
        TypeError: if ``arch`` is not a mapping.
        ValueError: if it lacks a column ``h0`` or ``h_sphere``.
    """
    V.mapping("arch", arch, ("h0", "h_sphere"))
    return np.maximum(arch["h0"], arch["h_sphere"])


def architecture_table(arch: Mapping[str, np.ndarray]) -> Table:
    """Per architecture of :func:`architecture_sweep`: widths, largest P and the fitted exponent in the width
    of :func:`architecture_hessian` (:func:`ntkbook.tables.fit_cells`).

    Raises:
        TypeError: if ``arch`` is not a mapping.
        ValueError: if it lacks a column of :func:`architecture_sweep`.
    """
    h = architecture_hessian(V.mapping("arch", arch, ("architecture", "width", "params")))
    rows = []
    for a in ARCHITECTURES:
        sel = arch["architecture"] == a
        widths = np.unique(arch["width"][sel])
        rows.append({"architecture": a, "widths": f"{int(widths.min())}–{int(widths.max())}",
                     "largest P": int(arch["params"][sel].max()), **fit_cells(arch["width"][sel], h[sel])})
    return show(rows, caption="max(‖H(W0)‖, ‖H‖ on the sphere) against the width (channels for the CNN).")


def architecture_figure(arch: Mapping[str, np.ndarray]) -> Figure:
    """:func:`architecture_hessian` against the width, one power law per architecture with the slope −1/2.
    Returns the figure.

    Raises:
        TypeError: if ``arch`` is not a mapping.
        ValueError: if it lacks a column of :func:`architecture_sweep`.
    """
    h = architecture_hessian(V.mapping("arch", arch, ("architecture", "width")))
    fig, ax = plotting.subplots(1, width=5.5, height=4.0)
    for (a, name), color in zip(ARCHITECTURES.items(), plotting.PALETTE, strict=False):
        sel = arch["architecture"] == a
        plotting.power_law(ax, arch["width"][sel], h[sel], label=name, color=color, reference_slope=-0.5)
    plotting.label_ticks(ax, arch["width"])
    ax.set_xlabel("width $m$ (channels for the CNN)")
    ax.set_ylabel(r"$\|H\|$")
    ax.legend(fontsize=7)
    return fig


LAYER_NORM_COLUMNS = ("architecture", "input", "width", "seed", "point", "quantity", "layer", "norm", "scaled",
                      "bound", "fc")
"""The columns of :func:`architecture_layer_norms` that the tables and groupings below read."""


def layer_norm_groups(rows: Mapping[str, np.ndarray]) -> list[tuple[str, str, int]]:
    """(architecture, quantity, layer) of every layer measured by :func:`architecture_layer_norms`, in the order
    CNN before ResNet, weights before hidden layers, layers increasing.

    Raises:
        TypeError: if ``rows`` is not a mapping.
        ValueError: if it lacks a column of :func:`architecture_layer_norms`.
    """
    V.mapping("rows", rows, LAYER_NORM_COLUMNS)
    out = []
    for a in ARCHITECTURES:
        for q in ("weight", "hidden"):
            sel = (rows["architecture"] == a) & (rows["quantity"] == q)
            out += [(a, q, int(layer)) for layer in np.unique(rows["layer"][sel])]
    return out


def layer_norm_series(rows: Mapping[str, np.ndarray], architecture: str, quantity: str,
                      layer: int) -> tuple[np.ndarray, np.ndarray]:
    """``(width, value)``, each of shape (networks,), for one layer of :func:`architecture_layer_norms`: value =
    the largest ``scaled`` norm (‖W^[k]‖/√m, ‖W⁽ˡ⁾‖/√m or ‖α⁽ˡ⁾‖/√m) of a network over W₀, the sphere points and
    (CNN weights) the kernel slices, for the section's input — the quantity whose order in m Lemmas G.2–G.5
    state.

    Raises:
        TypeError: if ``rows`` is not a mapping.
        ValueError: if it lacks a column, or no row matches ``architecture``, ``quantity`` and ``layer``.
    """
    V.mapping("rows", rows, LAYER_NORM_COLUMNS)
    architecture = V.choice("architecture", architecture, ARCHITECTURES)
    quantity = V.choice("quantity", quantity, ("weight", "hidden"))
    layer = V.positive_int("layer", layer)
    sel = (rows["architecture"] == architecture) & (rows["quantity"] == quantity) & (rows["layer"] == layer) & (
        rows["input"] == "x")
    if not sel.any():
        raise ValueError(f"no rows for architecture={architecture!r}, quantity={quantity!r}, layer={layer}")
    nets = sorted({(int(m), int(s)) for m, s in zip(rows["width"][sel], rows["seed"][sel], strict=True)})
    vals = [float(rows["scaled"][sel & (rows["width"] == m) & (rows["seed"] == s)].max()) for m, s in nets]
    return np.asarray([m for m, _ in nets], dtype=np.float64), np.asarray(vals)


def layer_norm_name(architecture: str, quantity: str, layer: int, depth: int) -> str:
    """How the tables and claims of :func:`architecture_layer_norms` name one layer's quantity, e.g.
    ``"max_k ‖W^[k]‖/√m, layer 2"`` (CNN weights), ``"‖v‖/√m"`` (the ResNet's layer ``depth`` + 1),
    ``"‖α⁽²⁾‖_F/√m"`` (CNN hidden layer).

    Raises:
        ValueError: for an unknown architecture or quantity, or a layer outside 1..depth(+1).
    """
    architecture = V.choice("architecture", architecture, ARCHITECTURES)
    quantity = V.choice("quantity", quantity, ("weight", "hidden"))
    depth = V.positive_int("depth", depth)
    top = depth + 1 if (architecture, quantity) == ("resnet", "weight") else depth
    layer = V.positive_int("layer", layer)
    if layer > top:
        raise ValueError(f"layer must be in 1..{top}, got {layer}")
    sup = str(layer).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    if quantity == "hidden":
        return f"‖α⁽{sup}⁾‖{'_F' if architecture == 'cnn' else ''}/√m"
    if architecture == "cnn":
        return f"max_k ‖W^[k]‖/√m, layer {layer}"
    return "‖v‖/√m" if layer == depth + 1 else f"‖W⁽{sup}⁾‖/√m"


def layer_norms_table(rows: Mapping[str, np.ndarray], architecture: str) -> Table:
    """One row per layer of one architecture of :func:`architecture_layer_norms` (weights, then hidden layers):
    the largest scaled norm at each width (over seeds, W₀, the sphere points and kernel slices; the section's
    input), its fitted exponent in m (:func:`ntkbook.tables.fit_cells` of :func:`layer_norm_series`; NaN for a
    single width), the largest
    ratio norm/bound (weights: c₀√m + R with c₀ = 3; hidden layers: the architecture's bound of
    :func:`hidden_norm_bounds`) and, for hidden layers, the largest ratio to Lemma F.3's bound with the fully
    connected constants (> 1: that bound fails).

    Raises:
        TypeError: if ``rows`` is not a mapping.
        ValueError: if it lacks a column, or ``architecture`` is unknown or has no rows.
    """
    architecture = V.choice("architecture", architecture, ARCHITECTURES)
    V.mapping("rows", rows, LAYER_NORM_COLUMNS)
    arch = (rows["architecture"] == architecture) & (rows["input"] == "x")
    if not arch.any():
        raise ValueError(f"rows holds no network of architecture {architecture!r}")
    depth = int(rows["layer"][arch & (rows["quantity"] == "hidden")].max())
    widths = np.unique(rows["width"][arch]).astype(int)
    out = []
    for a, q, layer in layer_norm_groups(rows):
        if a != architecture:
            continue
        m, y = layer_norm_series(rows, a, q, layer)
        sel = arch & (rows["quantity"] == q) & (rows["layer"] == layer)
        ratio = rows["norm"][sel] / rows["bound"][sel]
        fc = float(np.max(rows["norm"][sel] / rows["fc"][sel])) if q == "hidden" else math.nan
        out.append({"quantity": layer_norm_name(a, q, layer, depth),
                    **{f"m={w}": float(y[m == w].max()) for w in widths},
                    **(fit_cells(m, y) if widths.size > 1 else {"fitted exponent": math.nan, "95% CI": "—"}),
                    "max norm/bound": float(ratio.max()), "max norm/FC bound": fc})
    return show(out, caption=f"{ARCHITECTURES[architecture]}: the largest scaled norm per width (over seeds, W0, the "
                "sphere points and kernel slices), its log–log slope in m, and the largest ratios to the bound of "
                "its lemma and (hidden layers) to Lemma F.3's bound with the fully connected constants.")


def activation_hessian(acts: Mapping[str, np.ndarray]) -> np.ndarray:
    """max(‖H(W₀)‖, the ascent's best ‖H‖ in the ball) per run of :func:`activation_sweep`, shape (runs,):
    the quantity whose decay in the width Thm 3.2 predicts for every smooth activation.

    Raises:
        TypeError: if ``acts`` is not a mapping.
        ValueError: if it lacks a column ``h0`` or ``ascent``.
    """
    V.mapping("acts", acts, ("h0", "ascent"))
    return np.maximum(acts["h0"], acts["ascent"])


def activation_table(acts: Mapping[str, np.ndarray], settings: Activations3) -> Table:
    """Per activation of :func:`activation_sweep` (run with ``settings``): the median of
    :func:`activation_hessian` at each width, the median 𝖫_φ at W₀ and the fitted exponent in the width.

    Raises:
        TypeError: if ``settings`` is not an ``Activations3`` or ``acts`` not a mapping.
        ValueError: if ``acts`` lacks a column of :func:`activation_sweep`.
    """
    V.instance("settings", settings, Activations3)
    h = activation_hessian(V.mapping("acts", acts, ("activation", "width", "L_phi")))
    rows = []
    for a in settings.activations:
        sel = acts["activation"] == a
        rows.append({"activation": a,
                     **{f"m={m}": float(np.median(h[sel & (acts["width"] == m)])) for m in settings.widths},
                     "L_phi (W0)": float(np.nanmedian(acts["L_phi"][sel])), **fit_cells(acts["width"][sel], h[sel])})
    return show(rows, caption=f"Median of max(‖H(W0)‖, ascent in the ball of radius {settings.radius:g}) per "
                "activation and width; L_phi = max_l ‖J_α‖ at W0.")


def relu_table(relu: Mapping[str, np.ndarray], settings: Relu3) -> Table:
    """The rows of :func:`relu_versus_smooth` (run with ``settings``): autodiff ‖H‖, the defect of ∫HΔ on the
    segment and the kernel change, one row per run.

    Raises:
        TypeError: if ``settings`` is not a ``Relu3`` or ``relu`` not a mapping.
        ValueError: if ``relu`` lacks a column of :func:`relu_versus_smooth`.
    """
    V.instance("settings", settings, Relu3)
    keys = ("activation", "width", "seed", "hessian", "defect", "kernel_change")
    V.mapping("relu", relu, keys)
    return show({k: relu[k] for k in keys}, caption="Autodiff Hessian and the defect of ∫HΔ on a segment of "
                f"length {settings.radius:g}.")


__all__ = [
    "APP_G_LEMMAS",
    "ARCHITECTURES",
    "GAUSSIAN_C0",
    "LAYER_NORM_COLUMNS",
    "activation_hessian",
    "activation_sweep",
    "activation_table",
    "architecture_figure",
    "architecture_hessian",
    "architecture_layer_norms",
    "architecture_sweep",
    "architecture_table",
    "ball_figure",
    "ball_networks_table",
    "ball_piece",
    "ball_rates_table",
    "ball_sweep",
    "ball_table",
    "excess_figure",
    "gd_checkpoints",
    "hidden_norm_bounds",
    "kernel_slices",
    "layer_norm_groups",
    "layer_norm_name",
    "layer_norm_series",
    "layer_norms_at",
    "layer_norms_table",
    "min_width_figure",
    "min_width_sweep",
    "min_width_table",
    "narrowed_labels",
    "ratio_and_excess",
    "relu_table",
    "relu_versus_smooth",
    "segment_defect",
]

