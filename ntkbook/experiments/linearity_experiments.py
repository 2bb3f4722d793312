"""Chapter 6 — the experiments of Section 6 and Appendix B of Liu, Zhu & Belkin (2020): Figures 1 and 2.

Data (Eq. 42): :func:`ntkbook.data.gaussian_classes.gaussian_classes`, N = 60, one data set for all runs.

Figure 1 (Eq. 43–47).  f(w, V, b; x) = V·ReLU(w x + b)/√m, V ∈ ℝ^{3×m}, all parameters N(0, 1)
(:func:`one_hidden_layer`; ``mlp(key, (m,), output_dim=3, activation="relu", use_bias=True)`` is
exactly Eq. 43: the first layer's 1/√d is 1 for d = 1 and the bias is unscaled), f̃₁ = softmax(f),
f̃₂ = swish(f) with the paper's swish z·(1 + e^{−0.1 z})⁻¹ (:data:`PAPER_SWISH`).  Two optimization
tasks per (width, seed), from the same initialization:

* ``"cross_entropy"`` — Eq. (46) on the logits f; the kernels of f (``"linear"``) and of
  softmax(f) (``"softmax"``) are tracked along the *same* path;
* ``"swish"`` — the square loss of Eq. (47) on f̃₂; the kernel of f̃₂ (``"swish"``) is tracked.

Figure 2 (Eq. 48–49).  f = W₄ ReLU(W₃ (W₂ ReLU(W₁x + b₁)/√m + b₂)/√m_b + b₃)/√m with widths
(m, m_b, m), an identity (linear) bottleneck as in Eq. (48) and Eq. (31), trained with Eq. (49);
the kernel of the logits is tracked.  Two deliberate differences from Eq. (48) as printed, both
needed for the experiment to make sense (see :func:`bottleneck_network`): the NTK factor 1/√m_b of
the third layer (Eq. 48 prints none; without it f = Θ(√m_b) at initialization) and biases in the
hidden layers (without them f is positively homogeneous in x, f(x) = x·f(1) for x > 0, so the
points of class 0 with x > 0 and those of class 1 get the same arg-max and the loss cannot fall
below a positive constant — measured at m = 300, m_b = 3: 0.28 after 2·10⁴ steps).

ΔK = sup_t ‖K(w_t) − K(w₀)‖_F / ‖K(w₀)‖_F on the full (N·3) × (N·3) kernel, measured inside the
compiled training loop of :func:`ntkbook.training.train` (:func:`ntkbook.training.kernel_change`:
structured per-layer kernels, no Jacobian) at log-spaced steps (``per_decade`` per factor 10, every step below that,
half the step cap, and each run's stopping step; :func:`measurement_steps`).

Pieces (:func:`nonlinear_output_pieces`, :func:`bottleneck_pieces`) are (task, width, block of
seeds); the runs of a block are vmapped in one compiled loop and spread over all visible devices
(:mod:`ntkbook.parallel`).  Checks: :func:`step_size_check` (the rule's constant halved),
:func:`sampling_check` (every step against the log-spaced steps), :func:`output_change_split` (the
terms A and B of Section 4's argument for a non-linear output).

Step sizes (:func:`step_sizes`, :func:`swish_step_sizes`).  For a loss ℓ of the logits whose Hessian
in f is bounded by β_ℓ, the Gauss–Newton part of the Hessian of the training loss in w is
(1/N)·Jᵀ∇²ℓ J ≼ (β_ℓ/N)·K_f, so gradient descent on the linearized model is stable iff
η < 2N/(β_ℓ λ_max(K_f)).  The rule of the cross-entropy runs is

    η = c · N / (β_ℓ · λ_max(K_f(w₀))),   c = ``lr_factor`` = 1 (half the stability limit),

per run, with K_f the kernel of the logits at initialization (nearly constant along the path for a
wide linear-output network, Chapter 3) and β_ℓ = 1/2 (the largest eigenvalue of diag(p) − ppᵀ is at
most 1/2); along the run the step follows the curvature at the current logits
(:class:`LocalCurvatureStep`, an optax rule: η·β_ℓ/β_t with β_t ≤ β_ℓ a bound at w_t), so that the
runs reach the paper's stopping rule (loss < 10⁻⁴, App. B) in about 10⁴ steps instead of ≈ 3·10⁵.

The swish runs minimize the square loss (1/2N)Σ‖swish(f) − y‖² of :mod:`ntkbook.training` — half the
paper's Eq. (47), so its stopping tolerance is half the paper's, its losses are reported doubled
(paper units) and the step sizes recorded are those for Eq. (47) (η/2).  Its curvature does not
fall with the loss, and its convergence is set by eigenvalues of the kernel 10⁻⁵–10⁻⁴ times the
largest, so these runs take the largest stable step from the curvature *measured* along the path:
η_t = c_s·N/λ̂_t, λ̂_t a bound on λ_max(D_t^{1/2} K_t D_t^{1/2}) with D_t the Hessian of the loss in
the logits and K_t the kernel of the logits, remeasured every 100 steps (:class:`LocalCurvatureStep`),
c_s = ``swish_lr_factor`` = 1.8 (90 % of the stability limit).  They need 0.6–1.8·10⁵ steps to the
rule (:func:`step_cap`); a run that cannot get there is stuck at a spurious stationary point
(:data:`SWISH_MINIMUM`, :func:`run_outcome`).  Float32 throughout: a loss of 10⁻⁴ and kernel
changes of 10⁻² are far above its resolution (the kernels' λ_max at w₀ is taken in float64 by
:mod:`ntkbook.eigen`).
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import _validation as V
from ..activations import swish
from ..data.gaussian_classes import LabelledData, gaussian_classes
from ..eigen import lambda_max, power_iteration
from ..fitting import PowerLawFit, power_law_fit
from ..kernels import empirical_ntk
from ..models import MLP, mlp, nonlinear_output
from ..parallel import shard_runs, unpad
from ..training import StopRule, kernel_change, record_schedule, stall_reference, train

Array = jax.Array
PyTree = Any

TRAININGS = ("cross_entropy", "swish")
"""Figure 1's two optimization tasks (Eq. 46 and Eq. 47)."""

KERNELS = {"cross_entropy": ("linear", "softmax"), "swish": ("swish",)}
"""The kernels tracked by each task: Figure 1 compares "linear", "softmax" and "swish"."""

FIGURE1_KINDS = ("linear", "softmax", "swish")

# ---------------------------------------------------------------------------------------------
# The paper's swish and the step-size rule
# ---------------------------------------------------------------------------------------------


PAPER_SWISH = swish(0.1)
"""Swish(z) = z ⊙ (1 + exp(−0.1 z))⁻¹ of Appendix B (Eq. 45): the registry's ``"swish(beta=0.1)"``
(:func:`ntkbook.activations.swish`; L = sup|φ'| ≈ 1.0998 as for every β, β_σ = sup|φ''| = 0.05)."""


def _swish_minimum() -> float:
    # φ'(z) = σ(u)(1 + u(1 − σ(u))), u = z/10, vanishes once, where 1 + u(1 − σ(u)) = 0 (u ≈ −1.2785)
    lo, hi = -30.0, -5.0  # φ' < 0 at lo, > 0 at hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if float(PAPER_SWISH.numpy(mid, 1)) < 0 else (lo, mid)
    return 0.5 * (lo + hi)


SWISH_MINIMUM = _swish_minimum()
"""z* ≈ −12.785, where the paper's swish has its minimum (φ' < 0 below it; φ(z*) = z* + 10 ≈ −2.785).  A logit whose
target is 1 and which lies below z* is pushed further down by the gradient of (φ(f) − 1)², since
(φ − 1)φ' > 0 there: φ(f) → 0⁻ as f → −∞, a spurious minimum with loss ≥ 1/N per such entry
(Eq. 47).  With |x| ≈ 10 the logits at w₀ have standard deviation ≈ 7, so a few per cent of the
initializations start there (:func:`trapped_entries`)."""


def trapped_entries(logits: Any, y: Any) -> np.ndarray:
    """Number of target entries (y = 1) whose logit lies below :data:`SWISH_MINIMUM`, per run.

    Args:
        logits: (..., N, k) logits f.
        y: one-hot targets (N, k).

    Returns:
        (...) integer counts."""
    f = np.asarray(logits, np.float64)
    return np.sum((f < SWISH_MINIMUM) & (np.asarray(y) == 1), axis=(-2, -1))


def loss_curvature(training: str) -> float:
    """β_ℓ: a bound on the largest eigenvalue of the Hessian of the per-sample loss in the logits.

    ``"cross_entropy"`` (Eq. 46/49): ∇²_f(−log softmax(f)_y) = diag(p) − ppᵀ, whose largest
    eigenvalue is at most 1/2.  ``"swish"``: the Gauss–Newton part swish'(f)² of ∇²_f ½(swish(f) − y)²,
    at most L_φ² (the term (swish − y)·swish'' is left out of the rule; |swish''| ≤ 0.05).
    """
    V.choice("training", training, TRAININGS)
    return 0.5 if training == "cross_entropy" else PAPER_SWISH.lipschitz**2


def step_sizes(kernels: Any, n: int, curvature: float, *, factor: float = 1.0) -> np.ndarray:
    """η = factor · n / (curvature · λ_max(K)) for every kernel of a stack.

    Args:
        kernels: flattened tangent kernels at initialization, (R, n·k, n·k) or one (n·k, n·k).
        n: number of training points N.
        curvature: β_ℓ of :func:`loss_curvature`.
        factor: the constant c (linearized gradient descent is stable for c < 2).

    Returns:
        (R,) step sizes (or a 0-d array for one kernel) for the losses of :mod:`ntkbook.training`.
    """
    k = V.numpy_array("kernels", kernels, ndim=(2, 3))
    n = V.positive_int("n", n)
    curvature = V.positive_float("curvature", curvature)
    factor = V.positive_float("factor", factor)
    if k.shape[-1] != k.shape[-2]:
        raise ValueError(f"kernels must be square, got shape {k.shape}")
    lam = lambda_max(k)
    if np.any(lam <= 0):
        raise ValueError("a kernel has no positive eigenvalue: the model does not move under gradient descent")
    return factor * n / (curvature * lam)


def swish_step_sizes(kernels: Any, logits: Any, y: Any, *, factor: float) -> np.ndarray:
    """η = factor · N / λ_max(D^{1/2} K_f D^{1/2}) for every run: the measured-curvature step of the
    swish runs at w₀ (:class:`LocalCurvatureStep`), for the loss (1/2N)Σ‖φ(f) − y‖² of
    :mod:`ntkbook.training`.

    Args:
        kernels: flattened kernels of the logits, (R, N·k, N·k).
        logits: f(w₀) on the training inputs, (R, N, k).
        y: one-hot targets (N, k).
        factor: the constant c (linearized gradient descent is stable for c < 2).

    Returns:
        (R,) step sizes; D = diag(:func:`swish_loss_hessian`), the Hessian of the loss in f.
    """
    k = V.numpy_array("kernels", kernels, ndim=3)
    f = np.asarray(logits)
    factor = V.positive_float("factor", factor)
    if f.ndim != 3 or f.shape[0] != k.shape[0] or f.shape[1] * f.shape[2] != k.shape[-1]:
        raise ValueError(f"logits must be (R, N, k) matching kernels {k.shape}, got {f.shape}")
    s = np.sqrt(np.asarray(swish_loss_hessian(f, jnp.asarray(y)), np.float64).reshape(f.shape[0], -1))
    lam = lambda_max(s[:, :, None] * k * s[:, None, :])
    if np.any(lam <= 0):
        raise ValueError("a run has no curvature at w₀: the model does not move under gradient descent")
    return factor * f.shape[1] / lam


# ---------------------------------------------------------------------------------------------
# Data and networks
# ---------------------------------------------------------------------------------------------


def paper_data(settings: Mapping[str, Any]) -> LabelledData:
    """The one data set of Eq. (42) used by every run: ``n`` points from ``key(data_seed)``."""
    n = V.positive_int("n", settings.n)
    return _paper_data(n, V.positive_int("data_seed", settings.data_seed, minimum=0))


@cache
def _paper_data(n: int, data_seed: int) -> LabelledData:
    return jax.jit(gaussian_classes, static_argnums=1)(jax.random.key(data_seed), n)


@cache
def one_hidden_layer(width: int) -> MLP:
    """The network of Eq. (43): one ReLU hidden layer of width m with bias, 3 linear outputs.

    Only the configuration is returned (all its parameters are trainable, so the model object has
    no arrays and is shared by every seed: compiled code is reused across seeds).
    """
    return _config((V.positive_int("width", width),), "relu")


@cache
def bottleneck_network(width: int, bottleneck_width: int) -> MLP:
    """The network of Eq. (48): widths (m, m_b, m), ReLU – identity – ReLU, 3 linear outputs.

    NTK parameterization throughout (each layer divides by √fan-in, so the third layer divides by
    √m_b, which Eq. 48 omits) and N(0, 1) biases in the hidden layers (Eq. 48 has none; without
    them the data of Eq. 42 cannot be fitted, see the module docstring).
    """
    width = V.positive_int("width", width)
    bottleneck_width = V.positive_int("bottleneck_width", bottleneck_width)
    return _config((width, bottleneck_width, width), ("relu", "identity", "relu"))


def _config(widths: tuple[int, ...], activation: Any) -> MLP:
    """The model object of :func:`ntkbook.models.dense.mlp` without drawing its weights (shapes only)."""
    return jax.eval_shape(lambda k: mlp(k, widths, input_dim=1, output_dim=3, activation=activation,
                                        use_bias=True)[0], jax.random.key(0))


@cache
def output_maps(width: int) -> dict[str, Any]:
    """The three models of Eq. (43)–(45) at width m, sharing parameters: name → model."""
    base = one_hidden_layer(width)
    return {"linear": base, "softmax": nonlinear_output(base, "softmax"),
            "swish": nonlinear_output(base, PAPER_SWISH)}


def init_params(model: MLP, seeds: Sequence[int], *, salt: int) -> PyTree:
    """Parameters of ``model`` for each seed, stacked on a leading axis (all N(0, 1)).

    The pytree is that of :func:`ntkbook.models.dense.mlp` with the same distribution (every weight and
    bias N(0, 1), the NTK parameterization); the numbers come from one standard normal vector per
    run, split into the tensors.

    The key of a run is ``fold_in(fold_in(key(0), salt), seed)``: the same (salt, seed) gives the
    same network whatever else runs (``salt`` is the width for Figure 1, so the two tasks of a
    (width, seed) start from the same network).
    """
    seeds = [V.positive_int("seed", int(s), minimum=0) for s in seeds]
    if not seeds:
        raise ValueError("seeds must not be empty")
    return _init_stack(model, jnp.asarray(salt, jnp.uint32), jnp.asarray(seeds, jnp.uint32))


@jax.jit
def _init_stack(model: MLP, salt: Array, seeds: Array) -> PyTree:
    # the parameter pytree of ``mlp`` (shapes only), filled from ONE standard normal vector per run:
    # the same distribution as ``mlp``'s own initialization, but one PRNG call instead of one per
    # tensor, which keeps the compilation short (threefry is expensive to compile on CPUs)
    template = jax.eval_shape(lambda k: mlp(k, model.widths, input_dim=model.input_dim,
                                            output_dim=model.output_dim, activation=model.activations,
                                            use_bias=model.use_bias)[1], jax.random.key(0))
    leaves, treedef = jax.tree_util.tree_flatten(template)
    sizes = [math.prod(leaf.shape) for leaf in leaves]
    base = jax.random.fold_in(jax.random.key(0), salt)

    def init(seed):
        z = jax.random.normal(jax.random.fold_in(base, seed), (sum(sizes),), leaves[0].dtype)
        parts = jnp.split(z, np.cumsum(sizes)[:-1])
        return jax.tree_util.tree_unflatten(treedef, [p.reshape(leaf.shape) for p, leaf in zip(parts, leaves,
                                                                                              strict=True)])

    return jax.vmap(init)(seeds)


def logit_kernels(model: MLP, params: PyTree, x: Array) -> np.ndarray:
    """K_f(w₀) of every run, flattened: (R, N·k, N·k) (structured per-layer kernels)."""
    fn = jax.vmap(lambda p: empirical_ntk(model.apply, p, x, flat=True))
    return np.asarray(fn(params), dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# One training task for a stack of runs
# ---------------------------------------------------------------------------------------------


def train_runs(model: MLP, params: PyTree, data: LabelledData, *, training: str, settings: Mapping[str, Any],
               record_steps: Any = None, devices: Sequence[Any] | None = None, stall: bool = True) -> dict[str, Any]:
    """Gradient descent for the runs stacked in ``params``, with the step-size rule, ΔK tracked.

    Args:
        model: the base network (logits f).
        params: stacked parameters (R runs).
        data: the data of Eq. (42).
        training: ``"cross_entropy"`` (logits f, kernels of f and softmax(f) tracked) or
            ``"swish"`` (square loss on swish(f), its kernel tracked); the bottleneck network uses
            ``"cross_entropy"`` and its ``"linear"`` kernel.
        settings: ``max_steps`` (and ``swish_max_steps``), ``loss_tol`` (paper units), ``lr_factor``
            (c of the cross-entropy rule), ``swish_lr_factor`` (c of the measured-curvature rule of
            the swish runs), ``per_decade``.
        record_steps: override the log-spaced measurement steps (e.g. every step).
        devices: the devices the runs are spread over (default: all visible ones, see
            :mod:`ntkbook.parallel`).
        stall: whether the swish runs stop by the stall rule (:func:`stop_rule`); off for the checks
            that train for a fixed number of steps or record every step.

    Returns a dict of per-run lists: ``lr`` (for the paper's loss), ``lambda_max`` (of K_f(w₀)),
    ``delta_k`` {kernel: sup over the recorded steps}, ``final_change`` {kernel: at the stop},
    ``steps``, ``final_loss`` (paper units), ``cap_hit``, ``trapped`` (target entries below
    :data:`SWISH_MINIMUM` at the stop), ``lowest_target_logit`` (at the stop), and ``record_steps``
    (S,), ``curves`` {kernel: (R, S)} with ΔK(t) (held at its final value after a run stops),
    ``loss_curve`` (R, S).
    """
    V.choice("training", training, TRAININGS)
    max_steps = step_cap(settings, training)
    loss_tol = V.positive_float("loss_tol", settings.loss_tol)
    n = data.x.shape[0]
    kernels0 = logit_kernels(model, params, data.x)
    if training == "cross_entropy":
        lr = step_sizes(kernels0, n, loss_curvature(training), factor=settings.lr_factor)
    else:
        logits0 = jax.vmap(model.apply, in_axes=(0, None))(params, data.x)
        lr = swish_step_sizes(kernels0, logits0, data.y, factor=settings.swish_lr_factor)
    lam = lambda_max(kernels0)
    if training == "cross_entropy":
        apply_fn, loss = model.apply, "cross_entropy"
        track = {"linear": model.apply}
        if model.depth == 1:
            track["softmax"] = output_maps(model.widths[0])["softmax"].apply
    else:
        if model.depth != 1:
            raise ValueError("training='swish' is Figure 1's task: model must be the network of Eq. (43)")
        apply_fn, loss = output_maps(model.widths[0])["swish"].apply, "square"
        track = {"swish": apply_fn}
    if record_steps is None:
        record_steps = measurement_steps(max_steps, int(settings.per_decade))
    dtype = jax.tree_util.tree_leaves(params)[0].dtype
    unit = PAPER_LOSS_SCALE[training]
    sharded, runs = shard_runs({"params": params, "lr": jnp.asarray(lr, dtype)}, devices)
    result = train(apply_fn, sharded["params"], data.x, data.y, lr=sharded["lr"], runs=True, loss=loss,
                   optimizer=local_curvature_step(model, data, training),
                   stop=stop_rule(settings, training, stall=stall), record_steps=record_steps,
                   track={name: kernel_change(fn) for name, fn in track.items()})
    steps_rec = result.record_steps
    out = unpad({"params": result.params, "steps": result.steps, "stalled": result.stalled,
                 "final_loss": result.loss, "loss": result.losses,
                 "change": result.tracked, "final_change": result.final,
                 "sup_change": {name: result.sup(name) for name in track}}, runs)
    final_params = out.pop("params")
    steps = np.asarray(out["steps"], dtype=np.int64)
    final_loss = unit * np.asarray(out["final_loss"], dtype=np.float64)
    after = steps_rec[None, :] > steps[:, None]  # measurements after a run stopped are NaN
    curves = {name: np.where(after, np.asarray(out["final_change"][name], np.float64)[:, None],
                             np.asarray(out["change"][name], np.float64)) for name in track}
    final_logits = np.asarray(jax.vmap(model.apply, in_axes=(0, None))(final_params, data.x), np.float64)
    split = {name: output_change_split(name, model, params, final_params, data.x, kernels0)
             for name in track if name != "linear"}
    return {
        "split": split,
        "lr": (lr / unit).tolist(),
        "lambda_max": lam.tolist(),
        "delta_k": {k: np.asarray(v, np.float64).tolist() for k, v in out["sup_change"].items()},
        "final_change": {k: np.asarray(v, np.float64).tolist() for k, v in out["final_change"].items()},
        "steps": steps.tolist(),
        "final_loss": final_loss.tolist(),
        "cap_hit": ((steps >= max_steps) & ~(final_loss < loss_tol)).tolist(),
        "stalled": np.asarray(out["stalled"], bool).tolist(),
        "trapped": trapped_entries(final_logits, data.y).tolist(),
        "lowest_target_logit": final_logits.min(axis=(1, 2), where=np.asarray(data.y) == 1, initial=np.inf).tolist(),
        "record_steps": steps_rec.tolist(),
        "curves": {k: v.tolist() for k, v in curves.items()},
        "loss_curve": np.where(after, final_loss[:, None], unit * np.asarray(out["loss"], np.float64)).tolist(),
    }


class CurvatureState(NamedTuple):
    """State of the measured-curvature step of the swish runs (:class:`LocalCurvatureStep`), per run.

    ``kernel`` K_r (3N, 3N) and ``hessian`` d_r (3N,) at the last refresh r; ``lam_kernel`` λ_max(K_r),
    ``lam_gn`` λ_max(D_r^{1/2} K_r D_r^{1/2}) with their top eigenvectors ``u_kernel``, ``u_gn`` (warm
    starts of the next power iterations); ``lam_start`` the bound at w₀ (the step ``lr`` belongs to it).
    """

    kernel: Array
    hessian: Array
    lam_kernel: Array
    lam_gn: Array
    u_kernel: Array
    u_gn: Array
    lam_start: Array


def swish_loss_hessian(f: Any, y: Any) -> Any:
    """d = max(φ'(f)² + (φ(f) − y)·φ''(f), 0): the diagonal of ∇²_f ½‖φ(f) − y‖² (it is diagonal, the loss
    being a sum over the entries), negative parts removed, same shape as ``f`` (any array library's
    arrays: JAX in, JAX out).  Its largest entry is at most L_φ² + |φ(f) − y|·sup|φ''| (β_t of the bound)."""
    f = jnp.asarray(f)
    d = PAPER_SWISH.derivative(f) ** 2 + (PAPER_SWISH(f) - y) * PAPER_SWISH.derivative(f, 2)
    return jnp.maximum(d, 0.0)


class LocalCurvatureStep:
    """Gradient descent whose step follows the loss curvature along the path (an optax rule).

    The rule η = c·N/(β_ℓ λ_max(K_f)) uses the curvature bound β_ℓ of the loss in the logits over
    all logits and the kernel at w₀.

    **Cross-entropy** (``lr`` = that η): at the current logits f_t a smaller bound holds, and gradient
    descent stays as stable (and as close to gradient flow) with the step η·β_ℓ/β_t:
    ∇²_f ℓᵢ = diag(pᵢ) − pᵢpᵢᵀ has largest eigenvalue ≤ its trace Σ_c p_c(1 − p_c) ≤ 2(1 − p_{i,yᵢ}), so
    β_t = min(1/2, 2 maxᵢ (1 − p_{i,yᵢ})).  The curvature of the cross-entropy falls with the loss, so
    with the fixed η the loss decays like 1/t (the paper's L < 10⁻⁴ would need ≈ 3·10⁵ steps at
    m = 300); with β_t it decays geometrically.  β_t is floored at ``floor``·β_ℓ (steps at most
    1/floor times η) so that a run never takes an unbounded step.

    **Square loss on swish** (``lr`` = the step at w₀): the Gauss–Newton part of the Hessian of
    L = (1/2N)Σ‖φ(f) − y‖² in w is (1/N)Jᵀ D J with D = diag(d(f_t)) (:func:`swish_loss_hessian`), whose
    largest eigenvalue is λ_max(D^{1/2} K_t D^{1/2})/N, K_t the kernel of the logits at w_t: the
    curvature is *measured* along the path.  Every ``refresh`` steps (and at every step before
    that) K_r and d_r are recomputed and λ_max(K_r), λ_max(D_r^{1/2} K_r D_r^{1/2}) found by power
    iteration; in between, d moves with f_t and

        λ_max(D_t^{1/2} K_r D_t^{1/2}) ≤ λ_max(D_r^{1/2} K_r D_r^{1/2}) + ‖d_t − d_r‖_∞ · λ_max(K_r) =: λ̂_t

    (Weyl's inequality for K_r^{1/2} D K_r^{1/2}), and the step is c·N/λ̂_t = ``lr``·λ̂₀/λ̂_t.  The
    loss is a sum of squares, so its convergence is set by the smallest eigenvalues of the kernel
    and the step cannot grow as for the cross-entropy: it can only be as large as stability allows,
    c < 2 for the linearized model (``swish_lr_factor``).  Left out of λ̂_t: the drift of K between
    refreshes and the part Σ rᵢ φ'ᵢ ∇²fᵢ/N of the Hessian, O(‖r‖/√m); c below 2 is their margin, and
    a run that became unstable would show as a loss above the tolerance at the cap.

    Args:
        logits: (params) ↦ the logits f (N, k) on the training inputs (a hashable callable).
        y: one-hot targets (N, k).
        training: ``"cross_entropy"`` or ``"swish"``.
        floor: the smallest β_t/β_ℓ (cross-entropy).
        kernel: (params) ↦ the flattened kernel of the logits (N·k, N·k) (required for ``"swish"``).
        refresh: steps between two measurements of the kernel (``"swish"``).
        iterations: power iterations per refresh (warm-started; 10× as many at w₀).
    """

    def __init__(self, logits: Any, y: Any, training: str, floor: float = 1e-4, *, kernel: Any = None,
                 refresh: int = 100, iterations: int = 40):
        V.choice("training", training, TRAININGS)
        self.logits, self.y, self.training = logits, jnp.asarray(y), training
        self.floor = V.positive_float("floor", floor)
        self.reference = loss_curvature(training)
        if training == "swish" and kernel is None:
            raise ValueError("training='swish' measures the curvature: give kernel, (params) -> K_f (Nk, Nk)")
        self.kernel = kernel
        self.refresh = V.positive_int("refresh", refresh)
        self.iterations = V.positive_int("iterations", iterations)

    def curvature(self, params: PyTree) -> Array:
        """β_t of the cross-entropy rule at ``params`` (a scalar)."""
        p = jax.nn.softmax(self.logits(params), axis=-1)
        beta = jnp.minimum(0.5, 2.0 * jnp.max(1.0 - jnp.sum(p * self.y, axis=-1)))
        return jnp.maximum(beta, self.floor * self.reference)

    def measure(self, params: PyTree, state: CurvatureState | None = None) -> CurvatureState:
        """Kernel, loss Hessian and their top eigenpairs at ``params`` (warm-started from ``state``)."""
        k = self.kernel(params)
        d = swish_loss_hessian(self.logits(params), self.y).reshape(-1).astype(k.dtype)
        s = jnp.sqrt(d)
        gn = s[:, None] * k * s[None, :]
        if state is None:
            u0 = jnp.ones(k.shape[0], k.dtype)
            lam_k, u_k = power_iteration(k, u0, 10 * self.iterations)
            lam_g, u_g = power_iteration(gn, u0, 10 * self.iterations)
            return CurvatureState(k, d, lam_k, lam_g, u_k, u_g, lam_g)
        lam_k, u_k = power_iteration(k, state.u_kernel, self.iterations)
        lam_g, u_g = power_iteration(gn, state.u_gn, self.iterations)
        return CurvatureState(k, d, lam_k, lam_g, u_k, u_g, state.lam_start)

    def bound(self, params: PyTree, state: CurvatureState) -> Array:
        """λ̂_t ≥ λ_max(D_t^{1/2} K_r D_t^{1/2}) from the state of the last refresh (a scalar)."""
        d = swish_loss_hessian(self.logits(params), self.y).reshape(-1).astype(state.hessian.dtype)
        return state.lam_gn + jnp.max(jnp.abs(d - state.hessian)) * state.lam_kernel

    def __call__(self, lr: Any) -> optax.GradientTransformation:
        if self.training == "swish":
            return self._swish(lr)

        def init(params):
            return optax.EmptyState()

        def update(grads, state, params=None):
            scale = -lr * self.reference / self.curvature(params)
            return jax.tree_util.tree_map(lambda g: scale.astype(g.dtype) * g, grads), state

        return optax.GradientTransformation(init, update)

    def _swish(self, lr: Any) -> optax.GradientTransformationExtraArgs:
        def init(params):
            return self.measure(params)

        def update(grads, state, params=None, *, step=None, **_):
            if step is None:
                raise ValueError("the swish step rule needs the step t (ntkbook.training.train passes it)")
            renew = (step < self.refresh) | (step % self.refresh == 0)
            state = jax.lax.cond(renew, lambda: self.measure(params, state), lambda: state)
            scale = -lr * state.lam_start / self.bound(params, state)
            return jax.tree_util.tree_map(lambda g: scale.astype(g.dtype) * g, grads), state

        return optax.GradientTransformationExtraArgs(init, update)


_STEP_RULES: dict[tuple[Any, str, int], tuple[LabelledData, LocalCurvatureStep]] = {}


def local_curvature_step(model: MLP, data: LabelledData, training: str) -> LocalCurvatureStep:
    """The :class:`LocalCurvatureStep` of ``model``'s logits on ``data`` (one object per (model, data
    set, task), so that the compiled training loop is reused)."""
    key = (model, training, id(data))
    if key not in _STEP_RULES:  # the data set is kept with the rule, so its id stays unique
        kernel = functools.partial(_kernel_on, model, data.x) if training == "swish" else None
        _STEP_RULES[key] = (data, LocalCurvatureStep(functools.partial(_apply_on, model, data.x), data.y,
                                                     training, kernel=kernel))
    return _STEP_RULES[key][1]


def _apply_on(model: MLP, x: Array, params: PyTree) -> Array:
    return model.apply(params, x)


def _kernel_on(model: MLP, x: Array, params: PyTree) -> Array:
    return empirical_ntk(model.apply, params, x, flat=True)


def stop_rule(settings: Mapping[str, Any], training: str, *, stall: bool = True) -> StopRule:
    """The stopping rule of a run: the paper's loss < ``loss_tol`` (App. B), the step cap of
    :func:`step_cap`, and for the swish task the stall rule of :class:`ntkbook.training.StopRule`: from
    step ``check_steps`` on, a run whose loss fell by less than :data:`STALL_DECREASE` over the second half
    of the run stops as *stalled* instead of running to the cap (the cross-entropy runs have no stall rule:
    their curvature-following step keeps them converging geometrically; ``stall=False`` leaves it out).

    The rule assumes that a run whose loss stops falling sits on a plateau it would leave, if at all,
    only after far more steps; it cannot show that.  What is measured instead is the margin of the
    runs that do converge (:func:`least_decrease`, asserted in chapter 6)."""
    V.choice("training", training, TRAININGS)
    max_steps = step_cap(settings, training)
    tol = V.positive_float("loss_tol", settings.loss_tol) / PAPER_LOSS_SCALE[training]  # in training.py's units
    if training == "cross_entropy" or not stall:
        return StopRule(max_steps, loss_below=tol)
    return StopRule(max_steps, loss_below=tol, stall_below=STALL_DECREASE,
                    stall_after=V.positive_int("check_steps", settings.check_steps))


PAPER_LOSS_SCALE = {"cross_entropy": 1.0, "swish": 2.0}
"""The paper's loss over :mod:`ntkbook.training`'s, per task: Eq. (46)/(49) is training.py's cross-entropy;
Eq. (47), (1/N)Σ‖φ(f) − y‖², is twice training.py's square loss (1/2N)Σ‖·‖²."""


def step_cap(settings: Mapping[str, Any], training: str) -> int:
    """The step cap of a task: ``max_steps``, or ``swish_max_steps`` for Figure 1's swish task.

    Both are guards: every run is meant to stop at the paper's rule (loss < ``loss_tol``).  The square
    loss on swish converges like exp(−2ηλ t) over the eigenvalues λ of D^{1/2}KD^{1/2} that carry the
    residual, and those are 10⁻⁵–10⁻⁴ of the largest (the kernel entries of the points of class 0,
    x ≈ 0, are ~50 times smaller than those of the classes at ±10, and within a cluster the kernel is
    nearly singular): with the stable step η < 2N/λ_max it takes 0.6–1.8·10⁵ steps at every width
    (measured at m = 30 … 10⁴), against ~10⁴ for the cross-entropy whose step grows as its curvature
    falls.  A run that hits the cap is either stuck (trapped or stalled, :func:`run_outcome`) or needs a larger cap."""
    V.choice("training", training, TRAININGS)
    cap = settings.swish_max_steps if training == "swish" and hasattr(settings, "swish_max_steps") \
        else settings.max_steps
    return V.positive_int("max_steps", cap)


def measurement_steps(max_steps: int, per_decade: int = 12) -> np.ndarray:
    """The steps at which ΔK(t) is measured: :func:`ntkbook.training.record_schedule` (every step up
    to ``per_decade``, then ``per_decade`` log-spaced steps per factor 10, and the cap) plus
    ``max_steps // 2``, so that a run with half the step size can be compared at equal
    gradient-flow time η·t (:func:`step_size_check`).

    Between two log-spaced measurements t and 10^{1/per_decade}·t (21 % apart for 12 per decade)
    the kernel moves little compared with its change since t = 0, so the sup over these steps is
    the sup over all steps to within a fraction of a percent (:func:`sampling_check` measures it).
    """
    max_steps = V.positive_int("max_steps", max_steps)
    base = record_schedule(max_steps, per_decade=V.positive_int("per_decade", per_decade))
    return np.unique(np.concatenate([base, [max_steps // 2]]))


def output_jacobians(output: str, logits: Any) -> np.ndarray:
    """J_φ(f) for every input: (..., N, k, k); diag(p) − ppᵀ for ``"softmax"``, diag(φ'(f)) for ``"swish"``."""
    f = np.asarray(logits, dtype=np.float64)
    if output == "softmax":
        p = np.exp(f - f.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        return np.einsum("...a,ab->...ab", p, np.eye(f.shape[-1])) - p[..., :, None] * p[..., None, :]
    if output == "swish":
        d = np.asarray(PAPER_SWISH.derivative(jnp.asarray(f)), dtype=np.float64)
        return np.einsum("...a,ab->...ab", d, np.eye(f.shape[-1]))
    raise ValueError(f"unknown output {output!r}; expected 'softmax' or 'swish'")


def output_change_split(output: str, model: MLP, params0: PyTree, params_t: PyTree, x: Array,
                        kernels0: Any = None) -> dict[str, list[float]]:
    """The two terms of Section 4's argument for f̃ = φ(f), relative to ‖K̃(w₀)‖_F, per run.

    With J_t = blockdiag_i J_φ(f(w_t; x_i)) and K_t = K_f(w_t) (the (Nk × Nk) kernel of the logits),
    K̃_t = J_t K_t J_tᵀ and

        A = ‖J_t K₀ J_tᵀ − J₀ K₀ J₀ᵀ‖_F / ‖K̃₀‖_F     (the output map moves; the kernel of f frozen),
        B = ‖J_t (K_t − K₀) J_tᵀ‖_F / ‖K̃₀‖_F         (the kernel of f moves),

    so that A − B ≤ ‖K̃_t − K̃₀‖_F/‖K̃₀‖_F ≤ A + B (triangle inequality) — the matrix form of the
    paper's terms A and B below Eq. (27).  Float64 (NumPy) on the (Nk × Nk) matrices.

    Returns ``{"term_a", "term_b", "change"}`` (lists over runs); ``change`` is ‖K̃_t − K̃₀‖/‖K̃₀‖.
    """
    k0 = logit_kernels(model, params0, x) if kernels0 is None else np.asarray(kernels0, np.float64)
    kt = logit_kernels(model, params_t, x)
    f0 = np.asarray(jax.vmap(model.apply, in_axes=(0, None))(params0, x))
    ft = np.asarray(jax.vmap(model.apply, in_axes=(0, None))(params_t, x))
    n, k = f0.shape[1], f0.shape[2]

    def blockdiag(j):  # (R, N, k, k) -> (R, Nk, Nk), rows (i, a) as in flatten_ntk
        out = np.zeros((j.shape[0], n * k, n * k))
        for i in range(n):
            out[:, i * k:(i + 1) * k, i * k:(i + 1) * k] = j[:, i]
        return out

    j0, jt = blockdiag(output_jacobians(output, f0)), blockdiag(output_jacobians(output, ft))
    tilde0 = j0 @ k0 @ np.swapaxes(j0, 1, 2)
    norm0 = np.linalg.norm(tilde0, axis=(1, 2))
    a = np.linalg.norm(jt @ k0 @ np.swapaxes(jt, 1, 2) - tilde0, axis=(1, 2)) / norm0
    b = np.linalg.norm(jt @ (kt - k0) @ np.swapaxes(jt, 1, 2), axis=(1, 2)) / norm0
    change = np.linalg.norm(jt @ kt @ np.swapaxes(jt, 1, 2) - tilde0, axis=(1, 2)) / norm0
    return {"term_a": a.tolist(), "term_b": b.tolist(), "change": change.tolist()}


def _seed_chunks(runs: int, per_piece: int) -> list[list[int]]:
    runs = V.positive_int("runs", runs)
    per_piece = V.positive_int("runs_per_piece", per_piece)
    return [list(range(s, min(s + per_piece, runs))) for s in range(0, runs, per_piece)]


# ---------------------------------------------------------------------------------------------
# Figure 1: non-linear output layers
# ---------------------------------------------------------------------------------------------


def nonlinear_output_pieces(settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Independent pieces of Figure 1: one per (task, width, block of seeds).

    A block holds ``runs_per_piece`` seeds trained together (vmapped, and sharded over the
    devices): on a CPU as many as it has cores (:func:`ntkbook.training.train` runs the seeds of
    a wide network one per thread, and stacks those of a narrow one); all runs on a GPU, where
    they share every kernel launch.
    """
    if settings.trajectory_width not in settings.widths:
        raise ValueError(f"trajectory_width {settings.trajectory_width} must be one of widths {settings.widths}")
    return [{"training": t, "width": int(m), "seeds": seeds}
            for m in settings.widths for t in TRAININGS
            for seeds in _seed_chunks(settings.runs, settings.runs_per_piece)]


def nonlinear_output_piece(piece: Mapping[str, Any], settings: Mapping[str, Any], *,
                           record_steps: Any = None, stall: bool = True) -> dict[str, Any]:
    """Train the runs of one piece of Figure 1 (see :func:`train_runs`; ``stall``: the swish runs' stall rule)."""
    width = V.positive_int("width", piece["width"])
    model = one_hidden_layer(width)
    params = init_params(model, piece["seeds"], salt=width)
    result = train_runs(model, params, paper_data(settings), training=piece["training"], settings=settings,
                        record_steps=record_steps, stall=stall)
    result["seeds"] = list(piece["seeds"])
    return result


def _per_width(pieces, results, widths, training, field, kernel=None) -> list[list[Any]]:
    """[[per-run values] per width] from the pieces of one task (runs in seed order)."""
    out = []
    for m in widths:
        chosen = [(p["seeds"][0], r) for p, r in zip(pieces, results, strict=True)
                  if p["width"] == m and p.get("training", "cross_entropy") == training]
        values: list[Any] = []
        for _, r in sorted(chosen, key=lambda sr: sr[0]):
            values += list(r[field] if kernel is None else r[field][kernel])
        out.append(values)
    return out


def assemble_nonlinear_output(settings: Mapping[str, Any], pieces: list, results: list) -> dict[str, Any]:
    """The JSON body of ``nonlinear-output``: ``widths``, ``delta_k``, ``trajectory``, ``steps``,
    ``final_loss`` (each {"linear", "softmax", "swish"}: [[per run] per width]), ``swish_trapped``
    (target entries below :data:`SWISH_MINIMUM` at the stop, [[per run] per width]) and the learning
    rates in ``settings``."""
    widths = [int(m) for m in settings.widths]
    task = {"linear": "cross_entropy", "softmax": "cross_entropy", "swish": "swish"}
    delta_k = {k: _per_width(pieces, results, widths, task[k], "delta_k", k) for k in FIGURE1_KINDS}
    steps = {k: _per_width(pieces, results, widths, task[k], "steps") for k in FIGURE1_KINDS}
    final_loss = {k: _per_width(pieces, results, widths, task[k], "final_loss") for k in FIGURE1_KINDS}
    caps = {t: _per_width(pieces, results, widths, t, "cap_hit") for t in TRAININGS}
    lrs = {t: _per_width(pieces, results, widths, t, "lr") for t in TRAININGS}
    m_traj = int(settings.trajectory_width)
    trajectory: dict[str, Any] = {"width": m_traj}
    epochs: dict[str, list[int]] = {}
    for k in FIGURE1_KINDS:  # each task has its own step cap, hence its own measurement steps
        sel = sorted(((p, r) for p, r in zip(pieces, results, strict=True)
                      if p["width"] == m_traj and p["training"] == task[k]), key=lambda pr: pr[0]["seeds"][0])
        rec = np.asarray(sel[0][1]["record_steps"])
        keep = rec <= max(max(r["steps"]) for _, r in sel)
        epochs[k] = rec[keep].tolist()
        curves = np.concatenate([np.asarray(r["curves"][k]) for _, r in sel], axis=0)  # (R, S)
        trajectory[k] = curves[:, keep].T.tolist()  # [[per run] per epoch]
    trajectory["epochs"] = epochs
    _warn_caps("nonlinear-output", caps, widths, settings.max_steps)
    return {"widths": widths, "delta_k": delta_k, "trajectory": trajectory, "steps": steps,
            "final_loss": final_loss, "swish_trapped": _per_width(pieces, results, widths, "swish", "trapped"),
            "swish_stalled": _per_width(pieces, results, widths, "swish", "stalled"),
            "settings": {"learning_rates": lrs, "step_cap_hits": caps,
                         "step_size_rule": STEP_SIZE_RULE, "loss_units": LOSS_UNITS}}


STEP_SIZE_RULE = ("cross-entropy: eta = lr_factor * N / (beta_loss * lambda_max(K_f(w0))) per run, K_f the "
                  "(3N x 3N) tangent kernel of the logits at initialization, beta_loss = 1/2, scaled along the "
                  "run by 1/2 over a bound beta_t of the local curvature; swish (square loss): eta_t = "
                  "swish_lr_factor * N / lambda_hat_t, lambda_hat_t a bound on lambda_max(D^1/2 K_f D^1/2) at w_t "
                  "(D the loss Hessian in the logits, K_f remeasured every 100 steps); learning_rates are the "
                  "steps at w0 for the paper's losses (Eq. 46, 47, 49)")
LOSS_UNITS = "final_loss and loss_tol in the paper's units: Eq. (46)/(49) cross-entropy, Eq. (47) (1/N) sum ||.||^2"


def _warn_caps(name: str, caps: Mapping[str, list[list[bool]]], sizes: Sequence[int], cap: int) -> None:
    hits = [(t, m) for t, per in caps.items() for m, c in zip(sizes, per, strict=True) if any(c)]
    if hits:
        where = ", ".join(f"{t} at {m}" for t, m in hits)
        warnings.warn(f"{name}: the step cap ({cap} steps) was hit before the loss tolerance ({where}); "
                      "ΔK is the sup over the steps taken", stacklevel=2)


# ---------------------------------------------------------------------------------------------
# Figure 2: bottleneck
# ---------------------------------------------------------------------------------------------


def bottleneck_pieces(settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Independent pieces of Figure 2: one per (bottleneck width, block of seeds)."""
    return [{"bottleneck_width": int(mb), "seeds": seeds} for mb in settings.bottleneck_widths
            for seeds in _seed_chunks(settings.runs, settings.runs_per_piece)]


def bottleneck_piece(piece: Mapping[str, Any], settings: Mapping[str, Any], *,
                     record_steps: Any = None) -> dict[str, Any]:
    """Train the runs of one piece of Figure 2 with the cross-entropy of Eq. (49)."""
    m = V.positive_int("width", settings.width)
    mb = V.positive_int("bottleneck_width", piece["bottleneck_width"])
    model = bottleneck_network(m, mb)
    params = init_params(model, piece["seeds"], salt=1_000_003 * mb + m)
    result = train_runs(model, params, paper_data(settings), training="cross_entropy", settings=settings,
                        record_steps=record_steps)
    result["seeds"] = list(piece["seeds"])
    return result


def assemble_bottleneck(settings: Mapping[str, Any], pieces: list, results: list) -> dict[str, Any]:
    """The JSON body of ``bottleneck``: ``width``, ``bottleneck_widths``, ``delta_k``, ``steps``,
    ``final_loss`` ([[per run] per bottleneck width]) and the learning rates in ``settings``."""
    mbs = [int(mb) for mb in settings.bottleneck_widths]
    renamed = [{"width": p["bottleneck_width"], "seeds": p["seeds"]} for p in pieces]

    def col(field, kernel=None):
        return _per_width(renamed, results, mbs, "cross_entropy", field, kernel)

    caps = col("cap_hit")
    _warn_caps("bottleneck", {"cross_entropy": caps}, mbs, settings.max_steps)
    return {"width": int(settings.width), "bottleneck_widths": mbs, "delta_k": col("delta_k", "linear"),
            "steps": col("steps"), "final_loss": col("final_loss"),
            "settings": {"learning_rates": col("lr"), "step_cap_hits": caps, "step_size_rule": STEP_SIZE_RULE,
                         "loss_units": LOSS_UNITS}}


# ---------------------------------------------------------------------------------------------
# Running a whole figure in-process (the notebook), fits and tables
# ---------------------------------------------------------------------------------------------


def run_figure(name: str, settings: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[dict, dict]]]:
    """Run reproduction ``name`` (``"nonlinear-output"`` or ``"bottleneck"``) with these settings,
    in-process and without writing anything.

    Returns ``(result, pieces)``: the dict the command line writes (less the runner's bookkeeping
    keys) and the list of (piece, piece result) pairs, for analyses beyond the figure; each piece
    result records its wall time in ``"_seconds"``, as the command line's piece cache does."""
    from ..progress import progress

    if name == "nonlinear-output":
        pieces, compute, assemble = nonlinear_output_pieces, nonlinear_output_piece, assemble_nonlinear_output
    elif name == "bottleneck":
        pieces, compute, assemble = bottleneck_pieces, bottleneck_piece, assemble_bottleneck
    else:
        raise ValueError(f"unknown name {name!r}; expected 'nonlinear-output' or 'bottleneck'")
    items = pieces(settings)
    results = []
    for p in progress(items, desc=name, total=len(items)):
        start = time.perf_counter()
        results.append(compute(p, settings))
        results[-1]["_seconds"] = time.perf_counter() - start  # as the command line's piece cache records
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return assemble(settings, items, results), list(zip(items, results, strict=True))


def split_table(pieces: Sequence[tuple[dict, dict]]) -> dict[str, Any]:
    """Terms A and B of :func:`output_change_split` per output map and width (arrays over runs).

    Returns ``{kind: {"widths", "term_a": (W, R), "term_b": (W, R), "change": (W, R)}}`` for
    ``"softmax"`` and ``"swish"``."""
    out: dict[str, Any] = {}
    for kind, task in (("softmax", "cross_entropy"), ("swish", "swish")):
        chosen = [(p, r) for p, r in pieces if p.get("training") == task]
        widths = sorted({p["width"] for p, _ in chosen})
        table: dict[str, Any] = {"widths": widths}
        for field in ("term_a", "term_b", "change"):
            table[field] = np.asarray(_per_width([p for p, _ in chosen], [{"v": r["split"][kind][field]}
                                                                          for _, r in chosen], widths, task, "v"))
        out[kind] = table
    return out


def right_panel(pieces: Sequence[tuple[dict, dict]], width: int) -> dict[str, np.ndarray]:
    """The message of Figure 1's right panel at ``width``, per seed (runs in seed order).

    Returns ``{"seeds", "linear": sup_t ΔK_f(t), "softmax": ΔK_softmax(t_stop), "swish":
    ΔK_swish(t_stop), "ratio": min(softmax, swish) / linear}`` ((R,) arrays): the non-linear kernels
    at the end of training against the largest change of the linear one over the whole run.
    """
    width = V.positive_int("width", width)
    per: dict[str, dict[int, float]] = {"linear": {}, "softmax": {}, "swish": {}}
    for p, r in pieces:
        if p.get("width") != width or "training" not in p:
            continue
        for i, seed in enumerate(p["seeds"]):
            if p["training"] == "cross_entropy":
                per["linear"][seed] = float(r["delta_k"]["linear"][i])
                per["softmax"][seed] = float(r["final_change"]["softmax"][i])
            else:
                per["swish"][seed] = float(r["final_change"]["swish"][i])
    seeds = sorted(set(per["linear"]) & set(per["swish"]))
    if not seeds:
        raise ValueError(f"no run of both tasks at width {width} in pieces")
    out = {k: np.asarray([v[s] for s in seeds]) for k, v in per.items()}
    out["ratio"] = np.minimum(out["softmax"], out["swish"]) / out["linear"]
    out["seeds"] = np.asarray(seeds)
    return out


def held_out_linear_envelope(result: Mapping[str, Any], width: int) -> float:
    """The constant Ĉ of ΔK_f ≤ Ĉ/√m, calibrated on the widths other than ``width``.

    Ĉ = max √m'·ΔK_f(run) over every run at every width m' ≠ ``width`` of ``result`` (the Figure 1 result:
    ``result["widths"]`` (W,), ``result["delta_k"]["linear"]`` W lists of per-run ΔK).  Theorem 3.1 and
    Prop. 2.3 give ΔK_f = O(R/√m) with R = O(1), so Ĉ/√m is the envelope that the other widths predict
    for ``width``; a run at ``width`` above it contradicts the O(1/√m) decay with the constant the other
    widths show.  Raises ValueError when ``width`` is not in the result or is its only width.
    """
    width = V.positive_int("width", width)
    widths = [int(m) for m in result["widths"]]
    if width not in widths:
        raise ValueError(f"width {width} is not one of the result's widths {widths}")
    others = [(m, v) for m, v in zip(widths, result["delta_k"]["linear"]) if m != width]
    if not others:
        raise ValueError(f"width {width} is the result's only width: nothing to calibrate on")
    return float(max(math.sqrt(m) * float(np.max(v)) for m, v in others))


STALL_DECREASE = 0.01
"""A run has *stalled* when its loss fell by less than this fraction over the second half of the run: a
swish run stops so from step ``check_steps`` on (:func:`stop_rule`), and a run at its cap is classified so
(:func:`run_outcome`).  A run converging at the rate ρ falls by at least the factor e^{−ρt/2} over the
second half, more than 1 % once ρt > 0.0201; the converging runs' own margin is measured
(:func:`least_decrease`)."""


def run_outcome(steps: int, cap_hit: bool, trapped: int, record_steps: Sequence[int],
                loss_curve: Sequence[float], stalled: bool = False) -> tuple[str, float]:
    """How a run ended: ``"rule met"`` (loss below the tolerance), or — stopped by the stall rule
    (``stalled``) or at the cap — ``"trapped"`` (a target entry below the swish minimum,
    :func:`trapped_entries`), ``"stalled"`` (loss down by less than :data:`STALL_DECREASE` over the second
    half of the run) or ``"cap"`` (still descending: the cap was too small).  Returns ``(outcome,
    decrease)`` with decrease = 1 − L(t_end)/L(t_half), t_half the last recorded step ≤ t_end/2."""
    rec = np.asarray(record_steps)
    curve = np.asarray(loss_curve, np.float64)
    half = curve[rec <= steps // 2][-1]
    end = curve[rec <= steps][-1]
    decrease = float(1.0 - end / half)
    if not (cap_hit or stalled):
        return "rule met", decrease
    if trapped > 0:
        return "trapped", decrease
    return ("stalled" if decrease < STALL_DECREASE else "cap"), decrease


def least_decrease(record_steps: Sequence[int], loss_curve: Sequence[float], start: int, stop: int) -> float:
    """min over the recorded steps t with ``start`` ≤ t ≤ ``stop`` of 1 − L(t)/L(h), h the last recorded step
    ≤ t/2: how close a run came to the stall rule (:func:`stop_rule`) from ``start`` on (NaN if no step).

    Args:
        record_steps: (S,) recorded steps; loss_curve: (S,) losses there.
        start, stop: the first step the rule judges (``check_steps``) and the run's stopping step."""
    rec = np.asarray(record_steps, np.int64)
    curve = np.asarray(loss_curve, np.float64)
    if rec.shape != curve.shape or rec.ndim != 1:
        raise ValueError(f"record_steps and loss_curve must be matching (S,) arrays, got {rec.shape}, {curve.shape}")
    half = stall_reference(rec)
    judged = (rec >= max(int(start), 1)) & (rec <= int(stop)) & (half >= 0)
    if not judged.any():
        return float("nan")
    return float(np.min(1.0 - curve[judged] / curve[half[judged]]))


def runs_table(figure1: Sequence[tuple[dict, dict]], figure2: Sequence[tuple[dict, dict]] = (), *,
               judged_from: int | None = None) -> Any:
    """One row per run of Figures 1 and 2: figure, task, size, seed, steps, initial and final loss
    (paper units), whether the step cap stopped it, how it ended (:func:`run_outcome`, with the
    relative decrease of the loss over the second half of the run), and whether the loss fell from
    each measured step to the next up to the stop (``"loss falls"``), and the wall time of the piece
    the run belongs to (``"piece seconds"``, where :func:`run_figure` recorded it) — a pandas DataFrame.
    With ``judged_from`` (the first step of the stall rule, ``check_steps``), a swish run also gets
    ``"least decrease"`` (:func:`least_decrease` from that step to its stop)."""
    import pandas as pd

    task = {"cross_entropy": "cross-entropy (Eq. 46)", "swish": "swish (Eq. 47)"}
    rows = []
    for fig, pieces in (("Figure 1", figure1), ("Figure 2", figure2)):
        for p, r in pieces:
            size = f"m = {p['width']}" if fig == "Figure 1" else f"m_b = {p['bottleneck_width']}"
            name = task[p["training"]] if fig == "Figure 1" else "cross-entropy (Eq. 49)"
            for i, seed in enumerate(p["seeds"]):
                trapped = int(r["trapped"][i]) if p.get("training") == "swish" else 0
                # pieces computed before the stall rule (the paper-scale cross-entropy ones) have no "stalled"
                stalled = bool(r.get("stalled", [False] * len(p["seeds"]))[i])
                outcome, decrease = run_outcome(int(r["steps"][i]), bool(r["cap_hit"][i]), trapped,
                                                r["record_steps"], r["loss_curve"][i], stalled)
                taken = np.asarray(r["loss_curve"][i], np.float64)[np.asarray(r["record_steps"]) <= r["steps"][i]]
                rows.append({"figure": fig, "task": name, "size": size, "seed": int(seed),
                             "steps": int(r["steps"][i]), "initial loss": float(r["loss_curve"][i][0]),
                             "final loss": float(r["final_loss"][i]), "cap hit": bool(r["cap_hit"][i]),
                             "outcome": outcome,
                             "decrease, 2nd half": decrease if (r["cap_hit"][i] or stalled) else np.nan,
                             "loss falls": bool(np.all(np.diff(taken) <= 0)),
                             "least decrease": (least_decrease(r["record_steps"], r["loss_curve"][i], judged_from,
                                                               int(r["steps"][i]))
                                                if judged_from is not None and p.get("training") == "swish"
                                                else np.nan),
                             "piece seconds": float(r.get("_seconds", np.nan))})
    return pd.DataFrame(rows)


def stopping_summary(runs: Any, loss_tol: float) -> dict[str, dict[str, Any]]:
    """How the runs of :func:`runs_table` (a DataFrame) ended, for the stopping-rule claims of App. B.

    Returns ``{"cross_entropy": {...}, "swish": {...}}``.  Cross-entropy runs (both figures): the run
    count, whether all reached loss < ``loss_tol`` before their cap (``all_met``), the largest final loss
    and the most steps per figure.  Swish runs: the run count, whether each met the rule or is trapped or
    stalled (``all_met_or_stuck``), the counts per outcome, the step range and largest final loss of those
    that met it (None when none did), and a one-line description of each stuck run (``"none"``: no such
    run)."""
    ce = runs[runs["task"] != "swish (Eq. 47)"]
    sw = runs[runs["task"] == "swish (Eq. 47)"]
    met = sw[sw["outcome"] == "rule met"]
    stuck = sw[sw["outcome"].isin(["trapped", "stalled"])]
    cross_entropy = {
        "all_met": bool(np.all(ce["final loss"] < loss_tol) and not ce["cap hit"].any()),
        "runs": len(ce),
        "largest_final_loss": float(ce["final loss"].max()),
        "most_steps_figure_1": _largest(ce.loc[ce["figure"] == "Figure 1", "steps"]),
        "most_steps_figure_2": _largest(ce.loc[ce["figure"] == "Figure 2", "steps"]),
    }
    swish = {
        "all_met_or_stuck": bool(sw["outcome"].isin(["rule met", "trapped", "stalled"]).all()),
        "runs": len(sw),
        "met_rule": len(met),
        "trapped": int((sw["outcome"] == "trapped").sum()),
        "stalled": int((sw["outcome"] == "stalled").sum()),
        "steps_to_rule_min": None if met.empty else int(met["steps"].min()),
        "steps_to_rule_max": _largest(met["steps"]),
        "largest_final_loss_met": None if met.empty else float(met["final loss"].max()),
        "least_decrease_met": (None if met.empty or "least decrease" not in met
                               or met["least decrease"].isna().all() else float(met["least decrease"].min())),
        "stuck_runs": "; ".join(f"{r['size']}, seed {r['seed']}: {r['outcome']}, loss {r['final loss']:.3g}"
                                for r in stuck.to_dict("records")) or "none",
    }
    return {"cross_entropy": cross_entropy, "swish": swish}


def _largest(steps: Any) -> int | None:
    return None if len(steps) == 0 else int(steps.max())


def mean_delta_k(per_size: Sequence[Sequence[float]]) -> np.ndarray:
    """The paper's statistic: ΔK averaged over the runs, one value per width."""
    return np.asarray([float(np.mean(v)) for v in per_size])


def fit_mean(sizes: Sequence[int], per_size: Sequence[Sequence[float]]) -> PowerLawFit:
    """Log–log least-squares fit of the run-averaged ΔK against the width."""
    return power_law_fit(np.asarray(sizes, dtype=np.float64), mean_delta_k(per_size))


def figure1_table(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per width: mean (and min/max over runs) ΔK of each kind, steps and final losses."""
    rows = []
    for i, m in enumerate(result["widths"]):
        row: dict[str, Any] = {"m": m}
        for k in FIGURE1_KINDS:
            v = np.asarray(result["delta_k"][k][i])
            row[f"ΔK {k}"] = float(v.mean())
            row[f"{k} range"] = f"[{v.min():.3g}, {v.max():.3g}]"
        for t, k in (("CE", "linear"), ("swish", "swish")):
            row[f"steps {t}"] = int(max(result["steps"][k][i]))
            row[f"loss {t}"] = float(max(result["final_loss"][k][i]))
        rows.append(row)
    return rows


def figure2_table(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per bottleneck width: mean, min and max ΔK over runs, ΔK·√m_b, steps, final loss."""
    rows = []
    for mb, v, s, loss in zip(result["bottleneck_widths"], result["delta_k"], result["steps"],
                              result["final_loss"], strict=True):
        v = np.asarray(v)
        rows.append({"m_b": mb, "ΔK (mean)": float(v.mean()), "min": float(v.min()), "max": float(v.max()),
                     "ΔK·√m_b": float(v.mean() * math.sqrt(mb)), "steps (max)": int(max(s)),
                     "final loss (max)": float(max(loss))})
    return rows


# ---------------------------------------------------------------------------------------------
# Robustness: the step-size constant and the sampling of t
# ---------------------------------------------------------------------------------------------


def step_size_check(settings: Mapping[str, Any], *, figure: str, sizes: Sequence[int],
                    runs: int | None = None, pieces: Sequence[tuple[dict, dict]] | None = None) -> dict[str, Any]:
    """Is ΔK an artefact of the step-size rule?  Rerun with the rule's constant c halved.

    With η/2, t steps cover the gradient-flow time η·t/2, so the run with c/2 and the cap S is
    compared with the run with c over its first S/2 steps (S/2 is one of the measured steps, see
    :func:`measurement_steps`); a run that stops at the loss tolerance before that is compared over
    its whole path.  The cross-entropy runs use the same compiled loop (same cap), so their check
    costs no compilation.  The swish runs (both constants halved: ``lr_factor`` and
    ``swish_lr_factor``) need ~10⁵ steps to the rule, so their reruns are capped at S =
    ``check_steps`` and compared with the first ``check_steps``/2 steps of the run with c: the
    check is on the part of the path where the kernel moves most.

    Args:
        settings: the figure's settings.
        figure: ``"nonlinear-output"`` (sizes are widths m) or ``"bottleneck"`` (sizes are m_b).
        sizes: which sizes to rerun.
        runs: number of seeds (default: the settings' ``runs``).
        pieces: the (piece, result) pairs of :func:`run_figure` with these settings; the runs with
            the rule's own constant are then taken from them instead of being recomputed.

    Returns ``{"sizes", "kinds", "base": {kind: (len(sizes), R)}, "halved": {...},
    "relative_difference": {kind: (len(sizes),)}}``: ΔK with c over t ≤ S/2, ΔK with c/2 over t ≤ S,
    and |mean(halved) − mean(base)| / mean(base) per size.
    """
    if figure not in ("nonlinear-output", "bottleneck"):
        raise ValueError(f"unknown figure {figure!r}; expected 'nonlinear-output' or 'bottleneck'")
    runs = int(settings.runs) if runs is None else V.positive_int("runs", runs)
    seeds = list(range(runs))
    half_settings = settings.replace(lr_factor=settings.lr_factor / 2)
    if figure == "nonlinear-output":
        half_settings = half_settings.replace(swish_lr_factor=settings.swish_lr_factor / 2,
                                              swish_max_steps=min(settings.check_steps, settings.swish_max_steps))
        kinds = FIGURE1_KINDS

        def run(s, size, training):
            return nonlinear_output_piece({"training": training, "width": size, "seeds": seeds}, s)
        tasks = TRAININGS
    else:
        kinds = ("linear",)

        def run(s, size, training):
            return bottleneck_piece({"bottleneck_width": size, "seeds": seeds}, s)
        tasks = ("cross_entropy",)
    out: dict[str, Any] = {"sizes": [int(v) for v in sizes], "kinds": list(kinds), "base": {}, "halved": {},
                           "relative_difference": {}}
    base_rows: dict[str, list] = {k: [] for k in kinds}
    half_rows: dict[str, list] = {k: [] for k in kinds}
    for size in sizes:
        for training in tasks:
            base = _merged(pieces, figure, size, training, runs) if pieces is not None else None
            if base is None:
                base = run(settings, size, training)
            half = run(half_settings, size, training)
            rec = np.asarray(base["record_steps"])
            horizon = step_cap(half_settings, training) // 2
            for kind in KERNELS[training]:
                if kind not in kinds:
                    continue
                curve = np.asarray(base["curves"][kind])
                base_rows[kind].append(curve[:, rec <= horizon].max(axis=1))
                half_rows[kind].append(np.asarray(half["delta_k"][kind]))
    for kind in kinds:
        b, h = np.asarray(base_rows[kind]), np.asarray(half_rows[kind])
        out["base"][kind], out["halved"][kind] = b, h
        out["relative_difference"][kind] = np.abs(h.mean(axis=1) - b.mean(axis=1)) / b.mean(axis=1)
    return out


def _merged(pieces: Sequence[tuple[dict, dict]], figure: str, size: int, training: str,
            runs: int) -> dict[str, Any] | None:
    """The first ``runs`` runs of (size, training) in ``pieces``, merged across seed blocks (None if absent)."""
    key = "width" if figure == "nonlinear-output" else "bottleneck_width"
    chosen = sorted(((p, r) for p, r in pieces if p[key] == size and p.get("training", "cross_entropy") == training),
                    key=lambda pr: pr[0]["seeds"][0])
    seeds = [s for p, _ in chosen for s in p["seeds"]]
    if seeds[:runs] != list(range(runs)):
        return None
    kinds = chosen[0][1]["curves"].keys()
    return {"record_steps": chosen[0][1]["record_steps"],
            "curves": {k: np.concatenate([np.asarray(r["curves"][k]) for _, r in chosen])[:runs] for k in kinds},
            "delta_k": {k: np.concatenate([np.asarray(r["delta_k"][k]) for _, r in chosen])[:runs] for k in kinds}}


def trapped_at_init(settings: Mapping[str, Any], *, width: int, seeds: Sequence[int]) -> np.ndarray:
    """Target entries below :data:`SWISH_MINIMUM` at w₀ for each seed of Figure 1 at ``width`` (the
    initializations of :func:`nonlinear_output_piece`; no training): (len(seeds),) counts."""
    model = one_hidden_layer(V.positive_int("width", width))
    data = paper_data(settings)
    params = init_params(model, list(seeds), salt=int(width))
    return trapped_entries(jax.vmap(model.apply, in_axes=(0, None))(params, data.x), data.y)


def trap_check(settings: Mapping[str, Any], *, width: int, steps: int, search: int = 100) -> dict[str, Any]:
    """Train the first trapped initialization of Figure 1's swish task at ``width`` for ``steps`` steps.

    The seed is the smallest in ``range(search)`` with a target entry below :data:`SWISH_MINIMUM` at
    w₀ (:func:`trapped_at_init`); it is trained with the swish task's step rule (:func:`train_runs`, cap
    ``steps``, no stall rule: it takes all ``steps`` steps unless it meets the tolerance).  Returns ``{"seed",
    "trapped_start", "trapped_end", "lowest_start", "lowest_end" (the
    lowest target logit), "steps", "final_loss" (paper units), "floor"}`` with floor = trapped_end/N, the loss
    of the trapped entries alone once φ(f) → 0⁻ (each contributes (φ(f) − 1)² ≥ 1)."""
    width = V.positive_int("width", width)
    counts = trapped_at_init(settings, width=width, seeds=range(V.positive_int("search", search)))
    if not np.any(counts):
        raise ValueError(f"no trapped initialization among the first {search} seeds at width {width}")
    seed = int(np.argmax(counts > 0))
    model = one_hidden_layer(width)
    data = paper_data(settings)
    params = init_params(model, [seed], salt=width)
    s = settings.replace(swish_max_steps=V.positive_int("steps", steps))
    result = train_runs(model, params, data, training="swish", settings=s, stall=False)
    y = np.asarray(data.y)
    f0 = np.asarray(jax.vmap(model.apply, in_axes=(0, None))(params, data.x))[0]
    return {"seed": seed, "trapped_start": int(counts[seed]), "trapped_end": int(result["trapped"][0]),
            "lowest_start": float(f0[y == 1].min()), "lowest_end": float(result["lowest_target_logit"][0]),
            "steps": int(result["steps"][0]), "final_loss": float(result["final_loss"][0]),
            "floor": int(result["trapped"][0]) / y.shape[0]}


def sampling_check(settings: Mapping[str, Any], *, width: int, runs: int = 1,
                   max_steps: int | None = None) -> dict[str, Any]:
    """ΔK of Figure 1 at one width measured at every step against the log-spaced schedule.

    Args:
        settings: Figure 1's settings.
        width: the width m.
        runs: number of seeds.
        max_steps: a smaller cap for both runs (default: the settings'), e.g. to keep the dense
            measurement affordable at ``paper`` scale.

    Returns ``{"kinds", "every_step": {kind: (R,)}, "schedule": {kind: (R,)}, "relative_gap":
    {kind: max over runs of (every − schedule)/every}}``; the gap is ≥ 0 since the schedule's steps
    are a subset of all steps (the same runs, the same steps).  Each task is trained once, recording ΔK(t)
    at every step; the schedule's value is the sup of that record over the steps of
    :func:`measurement_steps` and the stopping step (the steps a run with the default schedule records,
    on the same path).
    """
    width = V.positive_int("width", width)
    seeds = list(range(V.positive_int("runs", runs)))
    if max_steps is not None:
        max_steps = V.positive_int("max_steps", max_steps)
        settings = settings.replace(max_steps=min(max_steps, settings.max_steps),
                                    swish_max_steps=min(max_steps, settings.swish_max_steps))
    out: dict[str, Any] = {"kinds": list(FIGURE1_KINDS), "every_step": {}, "schedule": {}, "relative_gap": {}}
    for training in TRAININGS:
        piece = {"training": training, "width": width, "seeds": seeds}
        cap = step_cap(settings, training)
        # no stall rule: it would judge every step, the schedule's run only its recorded steps
        dense = nonlinear_output_piece(piece, settings, record_steps=np.arange(cap + 1), stall=False)
        rec = np.asarray(dense["record_steps"])
        scheduled = np.isin(rec, measurement_steps(cap, int(settings.per_decade)))
        for kind in KERNELS[training]:
            e = np.asarray(dense["delta_k"][kind])
            # the curve holds ΔK at the stopping step after a run stops, so the stop is included
            s = np.asarray(dense["curves"][kind])[:, scheduled].max(axis=1)
            out["every_step"][kind], out["schedule"][kind] = e, s
            out["relative_gap"][kind] = float(np.max((e - s) / e))
    return out


# ---------------------------------------------------------------------------------------------
# Figures (shared by the notebook and the command line)
# ---------------------------------------------------------------------------------------------

KIND_LABELS = {"linear": "linear output f", "softmax": "softmax output f̃₁", "swish": "swish output f̃₂"}


def _size_ticks(ax: Any, sizes: Any) -> None:
    """Major ticks at the sizes (plain integers, 10^k for powers of ten ≥ 10⁴), no minor labels."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    def label(v: float) -> str:
        k = math.log10(v)
        return f"$10^{{{round(k)}}}$" if v >= 1e4 and abs(k - round(k)) < 1e-9 else f"{v:g}"

    sizes = [float(v) for v in sizes]
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.set_xticklabels([label(v) for v in sizes])
    ax.xaxis.set_minor_formatter(NullFormatter())


def plot_figure1(result: Mapping[str, Any], axes: Any = None):
    """Figure 1 of the paper: left, mean ΔK against m (log–log) with the runs as faint points and
    a dashed slope −1/2 through the linear-output means; right, ΔK(t) at ``trajectory.width``
    (mean over runs, log-spaced epochs on a logarithmic axis).  Returns the figure."""
    from .. import plotting

    if axes is None:
        fig, axes = plotting.subplots(2, width=5.2, height=3.9)
    else:
        fig = axes[0].figure
    ax_m, ax_t = axes
    widths = np.asarray(result["widths"], dtype=np.float64)
    for k, color in zip(FIGURE1_KINDS, plotting.PALETTE, strict=False):
        per = result["delta_k"][k]
        for m, v in zip(widths, per, strict=True):
            ax_m.scatter(np.full(len(v), m), v, s=9, alpha=0.35, color=color, linewidths=0)
        ax_m.plot(widths, mean_delta_k(per), "o-", color=color, label=KIND_LABELS[k])
    lin = mean_delta_k(result["delta_k"]["linear"])
    mid = np.exp(np.mean(np.log(widths)))
    y_mid = np.exp(np.mean(np.log(lin)))
    ax_m.plot(widths, y_mid * (widths / mid) ** -0.5, "--", color="0.35", linewidth=1.1, label=r"$\propto m^{-1/2}$")
    ax_m.set_xscale("log")
    ax_m.set_yscale("log")
    _size_ticks(ax_m, widths)
    ax_m.set_xlabel("width m")
    ax_m.set_ylabel("ΔK (mean over runs)")
    ax_m.legend()
    traj = result["trajectory"]
    for k, color in zip(FIGURE1_KINDS, plotting.PALETTE, strict=False):
        epochs = np.asarray(traj["epochs"][k], dtype=np.float64)
        curve = np.asarray(traj[k], dtype=np.float64).mean(axis=1)
        ax_t.plot(epochs[1:], curve[1:], "-", color=color, label=KIND_LABELS[k])
    ax_t.set_xscale("log")
    ax_t.set_yscale("log")
    ax_t.set_xlabel("epoch t (full-batch GD steps)")
    ax_t.set_ylabel(r"$\|K(w_t)-K(w_0)\|_F/\|K(w_0)\|_F$")
    ax_t.set_title(f"m = {traj['width']}")
    ax_t.legend()
    fig.tight_layout()
    return fig


def plot_figure2(result: Mapping[str, Any], ax: Any = None):
    """Figure 2 of the paper: mean ΔK against the bottleneck width m_b (log–log), the runs as faint
    points, and the dashed Θ(1/√m_b) reference through the geometric mean of ΔK·√m_b."""
    from .. import plotting

    if ax is None:
        fig, ax = plotting.subplots(1, width=5.6, height=3.9)
    else:
        fig = ax.figure
    mbs = np.asarray(result["bottleneck_widths"], dtype=np.float64)
    color = plotting.PALETTE[0]
    for mb, v in zip(mbs, result["delta_k"], strict=True):
        ax.scatter(np.full(len(v), mb), v, s=9, alpha=0.35, color=color, linewidths=0)
    means = mean_delta_k(result["delta_k"])
    ax.plot(mbs, means, "o-", color=color, label=f"ΔK, m = {result['width']} (mean over runs)")
    c = np.exp(np.mean(np.log(means * np.sqrt(mbs))))
    grid = np.geomspace(mbs.min(), mbs.max(), 50)
    ax.plot(grid, c / np.sqrt(grid), "--", color="0.35", label=r"$\Theta(1/\sqrt{m_b})$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _size_ticks(ax, mbs)
    ax.set_xlabel("bottleneck width m_b")
    ax.set_ylabel("ΔK")
    ax.legend()
    fig.tight_layout()
    return fig


__all__ = [
    "FIGURE1_KINDS",
    "KERNELS",
    "PAPER_LOSS_SCALE",
    "PAPER_SWISH",
    "STALL_DECREASE",
    "SWISH_MINIMUM",
    "TRAININGS",
    "CurvatureState",
    "LocalCurvatureStep",
    "assemble_bottleneck",
    "assemble_nonlinear_output",
    "bottleneck_network",
    "bottleneck_piece",
    "bottleneck_pieces",
    "figure1_table",
    "figure2_table",
    "fit_mean",
    "held_out_linear_envelope",
    "init_params",
    "least_decrease",
    "local_curvature_step",
    "logit_kernels",
    "loss_curvature",
    "mean_delta_k",
    "measurement_steps",
    "nonlinear_output_piece",
    "nonlinear_output_pieces",
    "one_hidden_layer",
    "output_change_split",
    "output_jacobians",
    "output_maps",
    "paper_data",
    "plot_figure1",
    "plot_figure2",
    "right_panel",
    "run_figure",
    "run_outcome",
    "runs_table",
    "sampling_check",
    "split_table",
    "step_cap",
    "step_size_check",
    "step_sizes",
    "stop_rule",
    "swish_loss_hessian",
    "swish_step_sizes",
    "train_runs",
    "trap_check",
    "trapped_at_init",
    "trapped_entries",
]
