"""The setup of Section 6 and Appendix B of Liu, Zhu & Belkin (2020), shared by Figures 1 and 2 (chapter 6).

One data set of Eq. (42) (:func:`paper_data`); the networks of Eq. (43) and (48) (:func:`network`); the runs
of one piece, trained by full-batch gradient descent until the paper's rule (loss < 10⁻⁴) or a step cap,
with ΔK(t) = ‖K(w_t) − K(w₀)‖_F/‖K(w₀)‖_F of the full (3N × 3N) kernel measured inside the compiled loop of
:func:`ntkbook.training.train` (:func:`train_runs`).  Float32 throughout (a loss of 10⁻⁴ and kernel changes
of 10⁻² are far above its resolution; the λ_max of the kernels at w₀ are taken in float64).

Step sizes.  For a loss ℓ of the logits whose Hessian is bounded by β_ℓ, the Gauss–Newton part of the
training loss's Hessian is (1/N)Jᵀ∇²ℓJ ≼ (β_ℓ/N)K_f, so linearized gradient descent is stable iff
η < 2N/(β_ℓ λ_max(K_f)).  Cross-entropy (Eq. 46, 49): η = c·N/(β_ℓ λ_max(K_f(w₀))), c = ``lr_factor``,
β_ℓ = 1/2, scaled along the run by β_ℓ/β_t (:class:`LocalCurvatureStep`).  Swish (Eq. 47): the step follows
λ_max(D^{1/2} K_f D^{1/2}) measured along the path, c_s = ``swish_lr_factor``.  The swish runs minimize
(1/2N)Σ‖φ(f) − y‖², half of Eq. (47): losses are reported in the paper's units (:data:`PAPER_LOSS_SCALE`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd

from ..activations import swish
from ..data.gaussian_classes import LabelledData, gaussian_classes
from ..eigen import lambda_max, power_iteration
from ..kernels import empirical_ntk
from ..models import MLP, mlp, nonlinear_output
from ..parallel import shard_runs, unpad
from ..random import fold_key
from ..training import StopRule, kernel_change, record_schedule, train

PyTree = Any

KERNELS = {"cross_entropy": ("linear", "softmax"), "swish": ("swish",)}
"""The kernels each task tracks: Eq. (46) trains f, whose kernel and that of softmax(f) are measured on the
same path; Eq. (47) trains swish(f)."""

PAPER_SWISH = swish(0.1)
"""swish(z) = z·(1 + e^{−0.1z})⁻¹ of Eq. (45) (sup|φ'| ≈ 1.0998 as for every β, sup|φ''| = 0.05)."""

PAPER_LOSS_SCALE = {"cross_entropy": 1.0, "swish": 2.0}
"""The paper's loss over :mod:`ntkbook.training`'s: Eq. (47) is twice (1/2N)Σ‖·‖²."""

STALL_DECREASE = 0.01
"""A swish run stops as *stalled* from step ``check_steps`` on when its loss fell by less than this fraction
over the second half of the run (:class:`ntkbook.training.StopRule`)."""

COLUMNS = {
    "seed": "the run's seed", "output": "the kernel measured: linear (f), softmax or swish",
    "delta_k": "ΔK = sup over the measured steps of ‖K(w_t) − K(w₀)‖_F/‖K(w₀)‖_F",
    "final_change": "‖K(w_T) − K(w₀)‖_F/‖K(w₀)‖_F at the stop T", "steps": "steps taken T",
    "final_loss": "loss at T (paper's units)", "cap_hit": "stopped at the step cap above the tolerance",
    "stalled": "stopped by the stall rule", "trapped": "target entries below the swish minimum at T (swish)",
    "lowest_logit": "lowest target logit at T (swish)", "lr": "step size at w₀ (paper's loss)",
    "lambda_max": "λ_max(K_f(w₀))", "term_a": "A of Section 4 at T (output map moves; NaN for linear)",
    "term_b": "B of Section 4 at T (kernel of f moves; NaN for linear)",
    "record_steps": "the measured steps t", "curve": "ΔK(t) at the measured steps (held after T)",
    "loss_curve": "loss at the measured steps (paper's units, held after T)",
}
"""The columns of a piece's rows: one row per run and tracked kernel."""


def _swish_minimum() -> float:
    # φ'(z) = σ(u)(1 + u(1 − σ(u))), u = z/10, vanishes once, where 1 + u(1 − σ(u)) = 0 (u ≈ −1.2785)
    lo, hi = -30.0, -5.0  # φ' < 0 at lo, > 0 at hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if float(PAPER_SWISH.numpy(mid, 1)) < 0 else (lo, mid)
    return 0.5 * (lo + hi)


SWISH_MINIMUM = _swish_minimum()
"""z* ≈ −12.785, the minimum of the paper's swish (φ' < 0 below).  A target logit (y = 1) below z* is pushed
further down by the gradient of (φ(f) − 1)², towards φ(f) → 0⁻: a spurious minimum with loss ≥ 1/N per such
entry (Eq. 47)."""


@functools.cache
def paper_data(n: int, data_seed: int) -> LabelledData:
    """The one data set of Eq. (42) used by every run: ``n`` points from ``key(data_seed)``."""
    return jax.jit(gaussian_classes, static_argnums=1)(jax.random.key(data_seed), n)


@functools.cache
def network(widths: tuple[int, ...]) -> MLP:
    """Eq. (43) for ``(m,)`` (ReLU, bias, 3 linear outputs); Eq. (48) for ``(m, m_b, m)`` (ReLU – identity –
    ReLU) in the NTK parameterization — every layer divides by √fan-in, so the third by √m_b, which Eq. (48)
    omits — with N(0, 1) biases, which Eq. (48) has none of (without them f is positively homogeneous in x and
    cannot fit Eq. 42).  Shapes only: one object per architecture, shared by every seed and compiled once."""
    act = "relu" if len(widths) == 1 else ("relu", "identity", "relu")
    return jax.eval_shape(lambda k: mlp(k, widths, input_dim=1, output_dim=3, activation=act,
                                        use_bias=True)[0], jax.random.key(0))


@functools.cache
def output_maps(width: int) -> dict[str, Any]:
    """The models of Eq. (43)–(45) at width m, sharing their parameters: name → model."""
    base = network((width,))
    return {"linear": base, "softmax": nonlinear_output(base, "softmax"),
            "swish": nonlinear_output(base, PAPER_SWISH)}


def init_params(model: MLP, seeds: Sequence[int], salt: int) -> PyTree:
    """The parameters of ``model`` for each seed, stacked (every weight and bias N(0, 1)), from the key
    ``fold_key(key(0), salt, seed)`` of each run: one standard normal vector per run, split into the tensors
    (one PRNG call instead of one per tensor keeps the compilation short)."""
    return _init_stack(model, fold_key(jax.random.key(0), int(salt)), jnp.asarray(list(seeds), jnp.uint32))


@jax.jit
def _init_stack(model: MLP, base: jax.Array, seeds: jax.Array) -> PyTree:
    # fold_key(base, seed) of every seed in one vectorized call (fold_key folds an integer as it is)
    keys = jax.vmap(lambda s: jax.random.fold_in(base, s))(seeds)
    template = jax.eval_shape(lambda k: mlp(k, model.widths, input_dim=model.input_dim, output_dim=3,
                                            activation=model.activations, use_bias=True)[1], jax.random.key(0))
    leaves, treedef = jax.tree_util.tree_flatten(template)
    sizes = [math.prod(leaf.shape) for leaf in leaves]

    def init(key):
        parts = jnp.split(jax.random.normal(key, (sum(sizes),), leaves[0].dtype), np.cumsum(sizes)[:-1])
        return treedef.unflatten([p.reshape(leaf.shape) for p, leaf in zip(parts, leaves, strict=True)])

    return jax.vmap(init)(keys)


def logits(model: MLP, params: PyTree, x: Any) -> np.ndarray:
    """f(w; x) of every stacked run: (R, N, 3)."""
    return np.asarray(jax.vmap(model.apply, in_axes=(0, None))(params, x))


def logit_kernels(model: MLP, params: PyTree, x: Any) -> np.ndarray:
    """K_f of every stacked run, flattened, float64: (R, 3N, 3N)."""
    fn = jax.vmap(lambda p: empirical_ntk(model.apply, p, x, flat=True))
    return np.asarray(fn(params), dtype=np.float64)


def trapped_entries(f: Any, y: Any) -> np.ndarray:
    """Target entries (y = 1) whose logit lies below :data:`SWISH_MINIMUM`, per run: f (…, N, k) → (…)."""
    return np.sum((np.asarray(f, np.float64) < SWISH_MINIMUM) & (np.asarray(y) == 1), axis=(-2, -1))


def swish_loss_hessian(f: Any, y: Any) -> Any:
    """d = max(φ'(f)² + (φ(f) − y)φ''(f), 0): the diagonal of ∇²_f ½‖φ(f) − y‖², negative parts removed."""
    f = jnp.asarray(f)
    d = PAPER_SWISH.derivative(f) ** 2 + (PAPER_SWISH(f) - y) * PAPER_SWISH.derivative(f, 2)
    return jnp.maximum(d, 0.0)


class CurvatureState(NamedTuple):
    """Per run, at the last refresh r: K_r, d_r, λ_max(K_r), λ_max(D_r^{1/2}K_rD_r^{1/2}), their top
    eigenvectors (warm starts) and the bound at w₀ (the step ``lr`` belongs to it)."""

    kernel: jax.Array
    hessian: jax.Array
    lam_kernel: jax.Array
    lam_gn: jax.Array
    u_kernel: jax.Array
    u_gn: jax.Array
    lam_start: jax.Array


class LocalCurvatureStep:
    """Gradient descent whose step follows the curvature of the loss along the path (an optax rule).

    **Cross-entropy** (``lr`` = c·N/(β_ℓ λ_max(K_f(w₀))), β_ℓ = 1/2): ∇²_f ℓᵢ = diag(pᵢ) − pᵢpᵢᵀ has largest
    eigenvalue ≤ its trace ≤ 2(1 − p_{i,yᵢ}), so at w_t the step η·β_ℓ/β_t with β_t = min(1/2, 2 maxᵢ(1 − p_{i,yᵢ}))
    is as stable; β_t ≥ ``floor``·β_ℓ.  The curvature falls with the loss: with the fixed η the loss decays
    like 1/t (10⁻⁴ after ≈ 3·10⁵ steps), with β_t geometrically (≈ 10⁴ steps).

    **Square loss on swish** (``lr`` = the step at w₀): the Gauss–Newton part of the Hessian of
    (1/2N)Σ‖φ(f) − y‖² is (1/N)JᵀDJ, D = diag(d(f_t)) (:func:`swish_loss_hessian`), whose largest eigenvalue is
    λ_max(D^{1/2}K_tD^{1/2})/N.  Every ``refresh`` steps (every step before that) K_r and d_r are measured and
    λ_max(K_r), λ_max(D_r^{1/2}K_rD_r^{1/2}) found by warm-started power iteration; in between (Weyl)

        λ_max(D_t^{1/2}K_rD_t^{1/2}) ≤ λ_max(D_r^{1/2}K_rD_r^{1/2}) + ‖d_t − d_r‖_∞ λ_max(K_r) =: λ̂_t,

    and the step is c_s·N/λ̂_t = ``lr``·λ̂₀/λ̂_t.  Left out: the drift of K between refreshes and the term
    Σrᵢφ'ᵢ∇²fᵢ/N = O(‖r‖/√m) of the Hessian; c_s < 2 is their margin.
    """

    def __init__(self, logits: Any, y: Any, training: str, floor: float = 1e-4, *, kernel: Any = None,
                 refresh: int = 100, iterations: int = 40):
        if training not in KERNELS or (training == "swish" and kernel is None):
            raise ValueError(f"training must be one of {sorted(KERNELS)} (swish with a kernel), got {training!r}")
        self.logits, self.y, self.training, self.floor = logits, jnp.asarray(y), training, floor
        self.reference, self.kernel, self.refresh, self.iterations = 0.5, kernel, refresh, iterations

    def curvature(self, params: PyTree) -> jax.Array:
        """β_t of the cross-entropy rule at ``params``."""
        p = jax.nn.softmax(self.logits(params), axis=-1)
        beta = jnp.minimum(0.5, 2.0 * jnp.max(1.0 - jnp.sum(p * self.y, axis=-1)))
        return jnp.maximum(beta, self.floor * self.reference)

    def measure(self, params: PyTree, state: CurvatureState | None = None) -> CurvatureState:
        """Kernel, loss Hessian and their top eigenpairs at ``params`` (warm-started from ``state``)."""
        k = self.kernel(params)
        d = swish_loss_hessian(self.logits(params), self.y).reshape(-1).astype(k.dtype)
        gn, steps = jnp.sqrt(d)[:, None] * k * jnp.sqrt(d)[None, :], self.iterations * (10 if state is None else 1)
        u_k, u_g = (jnp.ones(k.shape[0], k.dtype),) * 2 if state is None else (state.u_kernel, state.u_gn)
        (lam_k, u_k), (lam_g, u_g) = power_iteration(k, u_k, steps), power_iteration(gn, u_g, steps)
        return CurvatureState(k, d, lam_k, lam_g, u_k, u_g, lam_g if state is None else state.lam_start)

    def bound(self, params: PyTree, state: CurvatureState) -> jax.Array:
        """λ̂_t ≥ λ_max(D_t^{1/2}K_rD_t^{1/2}) from the state of the last refresh."""
        d = swish_loss_hessian(self.logits(params), self.y).reshape(-1).astype(state.hessian.dtype)
        return state.lam_gn + jnp.max(jnp.abs(d - state.hessian)) * state.lam_kernel

    def __call__(self, lr: Any) -> optax.GradientTransformation:
        def scaled(grads, scale):
            return jax.tree_util.tree_map(lambda g: scale.astype(g.dtype) * g, grads)

        if self.training == "cross_entropy":
            return optax.GradientTransformation(
                lambda params: optax.EmptyState(),
                lambda grads, state, params=None: (scaled(grads, -lr * self.reference / self.curvature(params)),
                                                   state))

        def update(grads, state, params=None, *, step=None, **_):
            if step is None:
                raise ValueError("the swish step rule needs the step t (ntkbook.training.train passes it)")
            renew = (step < self.refresh) | (step % self.refresh == 0)
            state = jax.lax.cond(renew, lambda: self.measure(params, state), lambda: state)
            return scaled(grads, -lr * state.lam_start / self.bound(params, state)), state

        return optax.GradientTransformationExtraArgs(self.measure, update)


_STEP_RULES: dict[tuple[Any, str, int], tuple[LabelledData, LocalCurvatureStep]] = {}


def _step_rule(model: MLP, data: LabelledData, training: str) -> LocalCurvatureStep:
    """One rule per (model, data set, task), so that the compiled training loop is reused (the data set is
    kept with its rule, so that its id stays unique)."""
    key = (model, training, id(data))
    if key not in _STEP_RULES:
        kernel = functools.partial(_kernel_on, model, data.x) if training == "swish" else None
        _STEP_RULES[key] = (data, LocalCurvatureStep(functools.partial(_apply_on, model, data.x), data.y, training,
                                                     kernel=kernel))
    return _STEP_RULES[key][1]


def _apply_on(model: MLP, x: Any, params: PyTree) -> jax.Array:
    return model.apply(params, x)


def _kernel_on(model: MLP, x: Any, params: PyTree) -> jax.Array:
    return empirical_ntk(model.apply, params, x, flat=True)


def step_cap(settings: Any, training: str) -> int:
    """The step cap of a task, a guard (every run is meant to stop at the paper's rule): ``max_steps``, or
    ``swish_max_steps`` for Figure 1's swish task, whose square loss converges like e^{−2ηλt} over eigenvalues
    λ of D^{1/2}KD^{1/2} 10⁻⁵–10⁻⁴ times the largest (0.6–1.8·10⁵ steps, against ~10⁴ for the cross-entropy)."""
    return int(settings.swish_max_steps if training == "swish" else settings.max_steps)


def measurement_steps(max_steps: int, per_decade: int) -> np.ndarray:
    """The steps at which ΔK(t) is measured: :func:`ntkbook.training.record_schedule` (every step up to
    ``per_decade``, then ``per_decade`` log-spaced steps per factor 10, and the cap) and ``max_steps // 2``."""
    return np.unique(np.concatenate([record_schedule(max_steps, per_decade=per_decade), [max_steps // 2]]))


def output_jacobians(output: str, f: Any) -> np.ndarray:
    """J_φ(f) per input, (…, N, k, k): diag(p) − ppᵀ for ``"softmax"``, diag(φ'(f)) for ``"swish"``."""
    f = np.asarray(f, dtype=np.float64)
    if output == "softmax":
        p = np.exp(f - f.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        return np.einsum("...a,ab->...ab", p, np.eye(f.shape[-1])) - p[..., :, None] * p[..., None, :]
    d = np.asarray(PAPER_SWISH.derivative(jnp.asarray(f)), dtype=np.float64)
    return np.einsum("...a,ab->...ab", d, np.eye(f.shape[-1]))


def output_change_split(output: str, k0: np.ndarray, kt: np.ndarray, f0: Any, ft: Any) -> tuple[Any, Any]:
    """The terms A and B of Section 4 (below Eq. 27) for f̃ = φ(f), relative to ‖K̃₀‖_F, per run (float64).

    With J_t = blockdiagᵢ J_φ(f(w_t; xᵢ)) and K_t the (Nk × Nk) kernel of the logits, K̃_t = J_tK_tJ_tᵀ,
    A = ‖J_tK₀J_tᵀ − J₀K₀J₀ᵀ‖_F/‖K̃₀‖_F (the output map moves) and B = ‖J_t(K_t − K₀)J_tᵀ‖_F/‖K̃₀‖_F (the kernel
    of f moves), so that A − B ≤ ‖K̃_t − K̃₀‖_F/‖K̃₀‖_F ≤ A + B.
    """
    j0, jt = output_jacobians(output, f0), output_jacobians(output, ft)
    n, k = j0.shape[1], j0.shape[2]

    def sandwich(j, kern):  # J K Jᵀ with J block-diagonal over the inputs, rows (i, a) as in flatten_ntk
        out = np.einsum("riac,ricjd,rjbd->riajb", j, kern.reshape(-1, n, k, n, k), j)
        return out.reshape(-1, n * k, n * k)

    tilde0 = sandwich(j0, k0)
    norm0 = np.linalg.norm(tilde0, axis=(1, 2))
    a = np.linalg.norm(sandwich(jt, k0) - tilde0, axis=(1, 2)) / norm0
    return a, np.linalg.norm(sandwich(jt, kt - k0), axis=(1, 2)) / norm0


def train_runs(model: MLP, seeds: Sequence[int], salt: int, data: LabelledData, *, training: str, settings: Any,
               record_steps: Any = None, stall: bool = True, devices: Sequence[Any] | None = None) -> pd.DataFrame:
    """Train the runs of ``seeds`` (parameters of :func:`init_params` with ``salt``) by gradient descent with the
    step rule of :class:`LocalCurvatureStep` until the loss (paper's units) is below ``settings.loss_tol`` or
    :func:`step_cap` steps — for the swish task also until the stall rule (``stall``: from step
    ``check_steps``, a loss down by less than :data:`STALL_DECREASE` over the second half) — with ΔK(t) of the
    kernels of :data:`KERNELS` measured at ``record_steps`` (default :func:`measurement_steps`), the runs
    vmapped and spread over ``devices`` (default all visible ones, :mod:`ntkbook.parallel`).

    ``training``: ``"cross_entropy"`` (Eq. 46/49 on the logits of ``model``) or ``"swish"`` (Eq. 47 on
    swish(f), ``model`` the network of Eq. 43).  Returns one row per run and tracked kernel (:data:`COLUMNS`).
    """
    if training not in KERNELS:
        raise ValueError(f"training must be one of {sorted(KERNELS)}, got {training!r}")
    params, x, y = init_params(model, seeds, salt), data.x, data.y
    max_steps, n, unit = step_cap(settings, training), x.shape[0], PAPER_LOSS_SCALE[training]
    kernels0 = logit_kernels(model, params, x)
    with_terms = training == "swish" or model.depth == 1  # the terms A, B of an output map: Figure 1
    f0 = logits(model, params, x) if with_terms else None
    lam = np.asarray(lambda_max(kernels0))
    if training == "cross_entropy":
        lr = settings.lr_factor * n / (0.5 * lam)
        apply_fn, loss, track = model.apply, "cross_entropy", {"linear": model.apply}
        if model.depth == 1:
            track["softmax"] = output_maps(model.widths[0])["softmax"].apply
    else:  # the measured curvature at w₀: η = c_s·N/λ_max(D^{1/2}K_fD^{1/2})
        s = np.sqrt(np.asarray(swish_loss_hessian(f0, jnp.asarray(y)), np.float64).reshape(len(seeds), -1))
        lr = settings.swish_lr_factor * n / np.asarray(lambda_max(s[:, :, None] * kernels0 * s[:, None, :]))
        apply_fn, loss = output_maps(model.widths[0])["swish"].apply, "square"
        track = {"swish": apply_fn}
    if record_steps is None:
        record_steps = measurement_steps(max_steps, settings.per_decade)
    tol = settings.loss_tol / unit  # in training.py's units
    stop = (StopRule(max_steps, loss_below=tol, stall_below=STALL_DECREASE, stall_after=settings.check_steps)
            if training == "swish" and stall else StopRule(max_steps, loss_below=tol))
    dtype = jax.tree_util.tree_leaves(params)[0].dtype
    sharded, runs = shard_runs({"params": params, "lr": jnp.asarray(lr, dtype)}, devices)
    result = train(apply_fn, sharded["params"], x, y, lr=sharded["lr"], runs=True, loss=loss,
                   optimizer=_step_rule(model, data, training), stop=stop, record_steps=record_steps,
                   track={name: kernel_change(fn) for name, fn in track.items()})
    out = unpad({"params": result.params, "steps": result.steps, "stalled": result.stalled, "loss": result.loss,
                 "losses": result.losses, "change": result.tracked, "final": result.final,
                 "sup": {name: result.sup(name) for name in track}}, runs)
    rec, steps = result.record_steps, np.asarray(out["steps"], np.int64)
    final_loss = unit * np.asarray(out["loss"], np.float64)
    after = rec[None, :] > steps[:, None]  # measurements after a run stopped are NaN: hold the final value
    ft = logits(model, out["params"], x).astype(np.float64)
    terms = {}
    if with_terms:
        kt = logit_kernels(model, out["params"], x)
        terms = {name: output_change_split(name, kernels0, kt, f0, ft) for name in track if name != "linear"}
    nan = np.full(runs, np.nan)
    per_run = {"seed": list(seeds), "steps": steps, "final_loss": final_loss,
               "cap_hit": (steps >= max_steps) & ~(final_loss < settings.loss_tol),
               "stalled": np.asarray(out["stalled"], bool),  # z* matters for swish(f) only:
               "trapped": trapped_entries(ft, y) if training == "swish" else nan,
               "lowest_logit": ft.min(axis=(1, 2), where=np.asarray(y) == 1, initial=np.inf) if training == "swish"
               else nan,
               "lr": lr / unit, "lambda_max": lam, "record_steps": [rec] * runs,
               "loss_curve": list(np.where(after, final_loss[:, None], unit * np.asarray(out["losses"], np.float64)))}
    frames = []
    for name in track:
        final = np.asarray(out["final"][name], np.float64)
        a, b = terms.get(name, (nan, nan))
        curve = np.where(after, final[:, None], np.asarray(out["change"][name], np.float64))
        frames.append(pd.DataFrame({"seed": per_run["seed"], "output": name,
                                    "delta_k": np.asarray(out["sup"][name], np.float64), "final_change": final,
                                    **{k: v for k, v in per_run.items() if k != "seed"},
                                    "term_a": a, "term_b": b, "curve": list(curve)}))
    return pd.concat(frames, ignore_index=True)


def seed_blocks(runs: int, per_piece: int) -> list[int]:
    """The first seed of each block of ``per_piece`` seeds trained together (vmapped) in one piece."""
    return list(range(0, runs, per_piece))


def block(first_seed: int, settings: Any) -> list[int]:
    """The seeds of the block that starts at ``first_seed``."""
    return list(range(first_seed, min(first_seed + settings.runs_per_piece, settings.runs)))


def mean_by(table: pd.DataFrame, by: str, column: str = "delta_k") -> pd.Series:
    """The paper's statistic: ``column`` averaged over the runs, per value of ``by``."""
    return table.groupby(by, sort=True)[column].mean()


__all__ = [
    "COLUMNS", "KERNELS", "PAPER_LOSS_SCALE", "PAPER_SWISH", "STALL_DECREASE", "SWISH_MINIMUM", "CurvatureState",
    "LocalCurvatureStep", "block", "init_params", "logit_kernels", "logits", "mean_by", "measurement_steps",
    "network", "output_change_split", "output_jacobians", "output_maps", "paper_data", "seed_blocks",
    "step_cap", "swish_loss_hessian", "train_runs", "trapped_entries",
]
