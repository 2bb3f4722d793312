"""Chapter 9, Section 4 of Oymak & Soltanolkotabi (2020) — phase transitions (Figure 2).

For every grid cell (k, d) and every trial: inputs uniform on S^{d−1} ⊂ ℝ^d, labels y ~ N(0, I_n),
the network f(x; W) = vᵀφ(Wx) with k hidden units initialized as in Theorem 2.1 (W₀ ~ N(0, 1),
v = ±‖y‖/√(kn), half of each sign, one zero for odd k), and gradient descent with a *constant*
step η (0.15 for softplus, 0.1 for ReLU) on L(W) = ½‖f(W) − y‖² (Eq. 2.1).  A run stops after
``max_iters`` updates (15 000 in the paper) or as soon as ‖f(W_τ) − y‖/‖y‖ < ``tol`` (2.5·10⁻³);
it is a success in the second case.  Runs whose residual becomes non-finite (η too large for the
curvature, which happens for tiny d) are failures and stop at once.

Training is the one loop of :mod:`ntkbook.training` on its loss (1/2n)‖f(W) − y‖², n times smaller than
Eq. (2.1), with step n·η (the same iteration), and its stopping rule: ‖f(W_τ) − y‖/‖y‖ < tol is
L(W_τ) < tol²‖y‖²/(2n) (converged), a relative residual above :data:`DIVERGED` or not finite is diverged.

Engineering (how a 625-cell × 10-trial panel fits on a laptop CPU):

* one *column* (fixed d) is computed at a time: all k of the grid and all trials together, one run of
  the loop per network, vmapped (per-run data: each trial has its own X and y);
* the data X, y of trial t are shared by all k of the column, and the columns slice the same
  Gaussian draws (common random numbers: each cell still averages independent trials, and
  neighbouring cells are compared on the same data);
* networks of different widths are padded to a common width (:class:`PaddedNetwork`: zero output
  weights on the padding units, which then get zero gradient) — padding is a model detail — within
  :data:`WIDTH_CLASSES` classes of similar widths;
* the loop advances the networks by up to ``chunk`` iterations, freezing each one as soon as it
  succeeds or diverges; between chunks the finished networks are dropped and the rest repadded to
  their largest width (run counts rounded up to a few bucket sizes so that few shapes are compiled);
* the classes are advanced in ``workers`` threads (each XLA loop here runs on one core);
* float32 throughout (the stopping tolerance is 2.5·10⁻³, far above float32 resolution).

Seeds: a panel draws Gaussian arrays once from ``fold_in(key, n)`` and every column slices them
(:func:`column_data`); the activation does not enter, so softplus and ReLU panels see the same data
and initial weights.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import jax
import numpy as np

from .. import _validation as V
from ..activations import get_activation
from ..progress import progress
from ..training import StopRule, train
from .moderate import output_weights

Array = jax.Array

PAPER_STEP_SIZES = {"softplus": 0.15, "relu": 0.1}
"""The constant learning rates of Section 4."""

_ROW_BUCKETS = tuple(sorted({4 * math.ceil(2 * 1.3**j) for j in range(40)}))


def _round_up(value: int, multiple: int) -> int:
    return multiple * math.ceil(value / multiple)


def _row_bucket(rows: int) -> int:
    return next(b for b in _ROW_BUCKETS if b >= rows)


def column_data(key: Array, n: int, d: int, ks: Sequence[int], trials: int, *, d_max: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, dict[tuple[int, int], np.ndarray]]:
    """Data and initial weights of one column: X (trials, n, d), y (trials, n), {(t, k): W₀ (k, d)}.

    All columns of a panel slice the same Gaussian arrays G (trials, n, d_max) and
    W (trials, len(ks), k_max, d_max): X = G[..., :d] with normalized rows (uniform on S^{d−1},
    because the direction of a standard Gaussian vector is uniform) and W₀ = W[t, j, :k, :d] —
    nested data across d and k.  The Gaussians come from a NumPy generator seeded with the bits of
    ``fold_in(key, n)`` (an explicit key, but no XLA compilation of a sampler per panel shape).
    """
    ks = [int(k) for k in ks]
    d_max = d if d_max is None else max(d, int(d_max))
    seed = np.asarray(jax.random.key_data(jax.random.fold_in(key, n))).astype(np.uint64).tolist()
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((trials, n, d_max), dtype=np.float32)[:, :, :d]
    y = rng.standard_normal((trials, n), dtype=np.float32)
    w = rng.standard_normal((trials, len(ks), max(ks), d_max), dtype=np.float32)
    x = (g / np.linalg.norm(g, axis=2, keepdims=True)).astype(np.float32)
    return x, y, {(t, k): w[t, j, :k, :d] for t in range(trials) for j, k in enumerate(ks)}


DIVERGED = 1e8
"""A run whose relative residual exceeds this is declared diverged (a failure) and stopped.

With the paper's constant step sizes, GD is unstable for the smallest d (η·λ_max(JJᵀ) > 2): the
residual then grows geometrically, by a factor of order ten per step, and would overflow float32
a few dozen steps later.  Stopping at 10⁸ (a loss 10¹⁶ times its initial value, far beyond the
transient loss spikes of "catapult" dynamics) keeps every number finite.
"""


@cache
def _activation(activation: str):
    """φ as a ``custom_jvp`` function whose derivative is the registry's fused φ'
    (:meth:`ntkbook.activations.Activation.value_and_prime`, computed with φ in one pass: one tanh for softplus;
    1{z ≥ 0} for ReLU, the paper's generalized derivative)."""
    pair = get_activation(activation).value_and_prime

    @jax.custom_jvp
    def phi(z):
        return pair(z)[0]

    @phi.defjvp
    def _jvp(primals, tangents):
        value, slope = pair(primals[0])
        return value, slope * tangents[0]

    return phi


@dataclass(frozen=True)
class PaddedNetwork:
    """f(W; x) = vᵀφ(Wx) (Eq. 1.1) for networks padded to a common number of hidden units.

    ``params = {"w": W (k_pad, d_pad)}`` is trained; ``data = {"x": X (n, d_pad), "v": v (k_pad,)}`` carries
    the inputs and the fixed output weights, with v = 0 on the padding units (they add nothing to f and get
    zero gradient) and zero columns of X and W beyond d.  Hashable: one compiled loop per shape.
    """

    activation: str

    def __call__(self, params: Any, data: Any) -> Array:
        return _activation(self.activation)(data["x"] @ params["w"].T) @ data["v"]


WIDTH_CLASSES = 8
"""Networks are padded within width classes: the live networks sorted by k are cut into this many contiguous
classes of about equal total width, each padded to its own largest k (the padding then costs ~10% of the work
instead of ~2× with one common width)."""


def _width_classes(nets: list[int], sizes: Mapping[int, int], classes: int) -> list[list[int]]:
    """Cut the networks, sorted by width, into at most ``classes`` contiguous groups of about equal total width."""
    order = sorted(nets, key=lambda i: sizes[i])
    total, groups, current, acc = sum(sizes[i] for i in order), [], [], 0
    for i in order:
        current.append(i)
        acc += sizes[i]
        if acc >= total * (len(groups) + 1) / classes and len(groups) < classes - 1:
            groups.append(current)
            current = []
    return [g for g in [*groups, current] if g]


def _advance(group, nets, weights, outw, x, y, d, d_pad, n, lr, tol, steps, activation, dtype):
    """``steps`` iterations of the one training loop (:func:`ntkbook.training.train`) for the networks of
    ``group``, all padded to the group's largest width (and to a bucketed number of runs, by repeating the
    last network, so that few shapes are compiled)."""
    k_pad = _round_up(max(nets[i][1] for i in group), 4)
    runs = _row_bucket(len(group))
    rows = [*group, *[group[-1]] * (runs - len(group))]
    w = np.zeros((runs, k_pad, d_pad), dtype)
    v = np.zeros((runs, k_pad), dtype)
    xr = np.zeros((runs, n, d_pad), dtype)
    yr = np.zeros((runs, n), dtype)
    for r, i in enumerate(rows):
        t, k = nets[i]
        w[r, :k, :d], v[r, :k], xr[r, :, :d], yr[r] = weights[i], outw[i], x[t], y[t]
    scale = np.sum(yr.astype(np.float64) ** 2, axis=1) / (2 * n)  # ‖y‖²/(2n): L = scale·(‖r‖/‖y‖)²
    stop = StopRule(steps, loss_below=tuple(tol**2 * scale), diverge_above=tuple(DIVERGED**2 * scale))
    with jax.enable_x64(np.dtype(dtype) == np.float64):  # threads do not inherit the caller's x64 context
        res = train(PaddedNetwork(activation), {"w": w}, {"x": xr, "v": v}, yr, lr=n * lr, stop=stop, runs=True,
                    per_run_data=True, record_steps=[0], group_size=runs)  # all networks in lock step
    rel = np.sqrt(np.asarray(res.loss, np.float64) / scale)
    return res.params["w"][:len(group)], res.steps[:len(group)], res.converged[:len(group)], \
        res.diverged[:len(group)], rel[:len(group)]


def fit_column(activation: str, n: int, d: int, ks: Sequence[int], *, trials: int, lr: float, max_iters: int,
               tol: float, key: Array, chunk: int = 1000, d_max: int | None = None, workers: int = 2,
               dtype: Any = np.float32) -> dict[str, np.ndarray]:
    """Gradient descent for every (k, trial) of column d; see the module docstring.

    ``d_max``: the largest d of the panel (columns slice common random arrays, see
    :func:`column_data`).  ``workers``: the width classes (:data:`WIDTH_CLASSES`) are advanced in this many
    parallel threads (XLA runs each of these small loops on one core; two groups use both cores of
    a laptop).  Returns arrays of shape (len(ks), trials): ``success`` (bool), ``iterations`` (the τ
    at which the run stopped: success, divergence or ``max_iters``) and ``rel_error``
    (‖f(W_τ) − y‖/‖y‖ then).  ``dtype``: float32 (the book; the tolerance is far above its resolution) or
    float64 (inside ``jax.enable_x64``, for tests against a float64 reference).
    """
    from concurrent.futures import ThreadPoolExecutor

    V.choice("activation", activation, PAPER_STEP_SIZES)
    n, d, trials = V.positive_int("n", n), V.positive_int("d", d), V.positive_int("trials", trials)
    ks = [V.positive_int("k", int(k)) for k in ks]
    lr, tol = V.positive_float("lr", lr), V.positive_float("tol", tol)
    max_iters, chunk = V.positive_int("max_iters", max_iters, minimum=0), V.positive_int("chunk", chunk)
    workers = V.positive_int("workers", workers)
    x, y, w0 = column_data(key, n, d, ks, trials, d_max=d_max)
    d_pad = _round_up(d, 4)
    nets = [(t, k) for t in range(trials) for k in ks]
    weights = {i: w0[net] for i, net in enumerate(nets)}
    outw = {i: np.asarray(output_weights(k, float(np.linalg.norm(y[t])), n)) for i, (t, k) in enumerate(nets)}
    done = np.zeros(len(nets), bool)
    success = np.zeros(len(nets), bool)
    iters = np.full(len(nets), -1, np.int64)
    rel = np.full(len(nets), np.nan)
    it = 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        while not done.all():
            steps = min(chunk, max_iters - it)
            if max_iters - it - steps <= chunk // 10:  # absorb a short remainder (one fewer compilation)
                steps = max_iters - it
            live = [int(i) for i in np.nonzero(~done)[0]]
            groups = _width_classes(live, {i: nets[i][1] for i in live}, WIDTH_CLASSES)
            futures = [pool.submit(_advance, g, nets, weights, outw, x, y, d, d_pad, n, lr, tol, steps, activation,
                                   dtype) for g in groups]
            for group, future in zip(groups, futures, strict=True):
                w_out, s_steps, s_conv, s_div, s_rel = future.result()
                for r, net in enumerate(group):
                    if s_conv[r] or s_div[r] or it + int(s_steps[r]) >= max_iters:
                        done[net], success[net] = True, bool(s_conv[r])
                        iters[net], rel[net] = it + int(s_steps[r]), float(s_rel[r])
                    else:
                        weights[net] = w_out[r, :nets[net][1], :d]
            it += steps
    shape = (trials, len(ks))
    return {"success": success.reshape(shape).T, "iterations": iters.reshape(shape).T,
            "rel_error": rel.reshape(shape).T}


def panel(activation: str, n: int, settings: Mapping[str, Any], key: Array) -> dict[str, np.ndarray]:
    """One panel of Figure 2: :func:`fit_column` for every d in ``settings.ds``.

    Settings: ``ks``, ``ds``, ``trials``, ``max_iters``, ``tol`` (and optionally ``chunk``).  Returns
    arrays of shape (len(ks), len(ds)): ``probability`` (fraction of successful trials) and
    ``median_iterations``, plus per-trial ``success`` (len(ks), len(ds), trials).
    """
    cols = [fit_column(activation, n, int(d), settings.ks, trials=settings.trials,
                       lr=PAPER_STEP_SIZES[activation], max_iters=settings.max_iters, tol=settings.tol,
                       key=key, chunk=settings.chunk, d_max=max(settings.ds),
                       workers=2)
            for d in progress(settings.ds, desc=f"{activation}, n = {n}", total=len(settings.ds))]
    success = np.stack([c["success"] for c in cols], axis=1)
    return {"probability": success.mean(axis=2), "success": success,
            "median_iterations": np.stack([np.median(c["iterations"], axis=1) for c in cols], axis=1),
            "rel_error": np.stack([c["rel_error"] for c in cols], axis=1)}


def region_masks(ks: Sequence[int], ds: Sequence[int], n: int, *, below: float = 0.5, above: float = 2.0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Boolean (len(ks), len(ds)) masks of the cells with kd ≤ below·n and with kd ≥ above·n."""
    kd = np.outer(np.asarray(ks), np.asarray(ds))
    return kd <= below * n, kd >= above * n
