"""``phase-transition``: Figure 2 of Oymak & Soltanolkotabi (2020) — the probability that gradient
descent fits n random labels, over a grid of widths k and input dimensions d (Chapter 9).

For every cell (k, d) and trial: inputs uniform on S^{d−1}, labels y ~ N(0, I_n), the network
f(x; W) = vᵀφ(Wx) initialized as in Theorem 2.1 (W₀ ~ N(0, 1), v = ±‖y‖/√(kn),
:func:`ntkbook.models.oymak_init.output_weights`), and gradient descent with the *constant* step η of
:data:`PAPER_STEP_SIZES` on L(W) = ½‖f(W) − y‖² (Eq. 2.1), stopped after ``max_iters`` updates or as soon
as ‖f(W_τ) − y‖/‖y‖ < ``tol`` (a success).  Training is the book's one loop (:func:`ntkbook.training.train`)
on its loss (1/2n)‖f − y‖², with the paper's step converted by :func:`ntkbook.training.book_step`; its stopping
rule declares a run diverged once its relative residual exceeds :data:`DIVERGED`.

Pieces are (activation, n, d) columns: every k and every trial of a column are computed together
(:func:`fit_column`), so an interrupted run resumes at the next unfinished column.  The JSON holds
``n_values``, ``activations``, ``ks``, ``ds`` and ``success`` = {activation: {n: [[probability per d] per k]}},
the median number of iterations and the per-trial outcomes behind every cell.  The chapter calls
:func:`ntkbook.reproduce.run` and :func:`plot_panels`, the command line the same two.

How a 625-cell × 10-trial panel fits on a laptop CPU: all k and trials of a column advance together, one
run of the loop per network, vmapped with per-run data; networks are padded to a common width (zero output
weights on the padding units, which then get zero gradient) within :data:`WIDTH_CLASSES` classes of similar
widths; the loop advances them by up to ``chunk`` iterations, each network frozen as soon as it succeeds or
diverges, and between chunks the finished ones are dropped (run counts rounded up to a few bucket sizes, so
that few shapes compile); the classes advance in two threads; float32 throughout (the tolerance 2.5·10⁻³ is
far above its resolution).  Common random numbers: the data of trial t are shared by all k of a column and
by both activations, and the columns slice the same Gaussian draws (:func:`column_data`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jax
import numpy as np

from .. import _validation as V
from .. import plotting
from ..activations import get_activation
from ..models.oymak_init import output_weights
from ..random import fold_key, numpy_generator
from ..reproduce import Reproduction, register, save_figure
from ..scales import PhaseTransition
from ..training import StopRule, book_step, loss_scale, train

Array = jax.Array

SEED = 0
PAPER_STEP_SIZES = {"softplus": 0.15, "relu": 0.1}
"""The constant learning rates of Section 4 (on Eq. 2.1)."""

DIVERGED = 1e8
"""A run whose relative residual exceeds this is declared diverged (a failure) and stopped.  With the paper's
constant steps GD is unstable for the smallest d (η·λ_max(JJᵀ) > 2): the residual grows by a factor of order
ten per step; stopping at 10⁸ keeps every number finite in float32."""

WIDTH_CLASSES = 8
"""Live networks, sorted by k, are cut into at most this many contiguous classes of about equal total width,
each padded to its own largest k (padding then costs ~10% of the work instead of ~2× with one common width)."""

CLASS_WORK = 2**18
"""Multiply–adds per iteration (n·d·Σk over the live networks) that one width class must have at least: below it
an iteration costs the loop's fixed overhead, and every extra class costs a loop and a compilation.  A ci column
(n = 20) is one class, a book column (n = 100, 250 networks) :data:`WIDTH_CLASSES` classes.  Classes change only
the padded shapes, hence float32 rounding (tested: the same outcomes and stopping iterations)."""

_ROW_BUCKETS = tuple(sorted({4 * math.ceil(2 * 1.3**j) for j in range(40)}))


def column_data(key: Array, n: int, d: int, ks: Sequence[int], trials: int, *, d_max: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, dict[tuple[int, int], np.ndarray]]:
    """Data and initial weights of one column: X (trials, n, d), y (trials, n), {(t, k): W₀ (k, d)}.

    All columns of a panel slice the same Gaussian arrays G (trials, n, d_max) and
    W (trials, len(ks), k_max, d_max): X = G[..., :d] with normalized rows (uniform on S^{d−1}) and
    W₀ = W[t, j, :k, :d] — nested data across d and k.  The Gaussians come from the NumPy generator of the
    key of the panel, ``fold_key(key, n)`` (:func:`ntkbook.random.numpy_generator`: no XLA compilation of a
    sampler per panel shape).
    """
    ks = [int(k) for k in ks]
    d_max = d if d_max is None else max(d, int(d_max))
    rng = numpy_generator(fold_key(key, n))
    g = rng.standard_normal((trials, n, d_max), dtype=np.float32)[:, :, :d]
    y = rng.standard_normal((trials, n), dtype=np.float32)
    w = rng.standard_normal((trials, len(ks), max(ks), d_max), dtype=np.float32)
    x = (g / np.linalg.norm(g, axis=2, keepdims=True)).astype(np.float32)
    return x, y, {(t, k): w[t, j, :k, :d] for t in range(trials) for j, k in enumerate(ks)}


@cache
def _activation(activation: str):
    """φ as a ``custom_jvp`` function whose derivative is the registry's fused φ' (one tanh for softplus;
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
    """f(W; x) = vᵀφ(Wx) (Eq. 1.1) for networks padded to a common number of hidden units: ``params = {"w":
    W (k_pad, d_pad)}`` is trained, ``data = {"x": X (n, d_pad), "v": v (k_pad,)}`` carries the inputs and the
    fixed output weights, v = 0 on the padding units.  Hashable: one compiled loop per shape."""

    activation: str

    def __call__(self, params: Any, data: Any) -> Array:
        return _activation(self.activation)(data["x"] @ params["w"].T) @ data["v"]


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
    """``steps`` iterations of the one training loop for the networks of ``group``, padded to the group's
    largest width (and to a bucketed number of runs, repeating the last network)."""
    k_pad = 4 * math.ceil(max(nets[i][1] for i in group) / 4)
    runs = next(b for b in _ROW_BUCKETS if b >= len(group))
    rows = [*group, *[group[-1]] * (runs - len(group))]
    w, v = np.zeros((runs, k_pad, d_pad), dtype), np.zeros((runs, k_pad), dtype)
    xr, yr = np.zeros((runs, n, d_pad), dtype), np.zeros((runs, n), dtype)
    for r, i in enumerate(rows):
        t, k = nets[i]
        w[r, :k, :d], v[r, :k], xr[r, :, :d], yr[r] = weights[i], outw[i], x[t], y[t]
    # the book's loss of a relative residual ρ = ‖r‖/‖y‖: L = ½‖r‖²/loss_scale = scale·ρ²
    scale = np.sum(yr.astype(np.float64) ** 2, axis=1) / (2 * loss_scale("half-sum", n))
    stop = StopRule(steps, loss_below=tuple(tol**2 * scale), diverge_above=tuple(DIVERGED**2 * scale))
    with jax.enable_x64(np.dtype(dtype) == np.float64):  # threads do not inherit the caller's x64 context
        res = train(PaddedNetwork(activation), {"w": w}, {"x": xr, "v": v}, yr, lr=book_step(lr, "half-sum", n),
                    stop=stop, runs=True, per_run_data=True, record_steps=[0], group_size=runs)
    rel = np.sqrt(np.asarray(res.loss, np.float64) / scale)
    m = len(group)
    return res.params["w"][:m], res.steps[:m], res.converged[:m], res.diverged[:m], rel[:m]


def fit_column(activation: str, n: int, d: int, ks: Sequence[int], *, trials: int, lr: float, max_iters: int,
               tol: float, key: Array, chunk: int = 1000, d_max: int | None = None, workers: int = 2,
               dtype: Any = np.float32) -> dict[str, np.ndarray]:
    """Gradient descent for every (k, trial) of column d (the piece of the reproduction; see the module).

    ``d_max``: the largest d of the panel (columns slice common random arrays, :func:`column_data`);
    ``workers``: threads advancing the width classes; ``dtype``: float32 (the book) or float64 (inside
    ``jax.enable_x64``, for tests).  Returns arrays of shape (len(ks), trials): ``success``, ``iterations``
    (the τ at which the run stopped: success, divergence or ``max_iters``) and ``rel_error`` (‖f(W_τ) − y‖/‖y‖).
    """
    V.choice("activation", activation, PAPER_STEP_SIZES)
    n, d, trials = V.positive_int("n", n), V.positive_int("d", d), V.positive_int("trials", trials)
    ks = [V.positive_int("k", int(k)) for k in ks]
    lr, tol = V.positive_float("lr", lr), V.positive_float("tol", tol)
    max_iters, chunk = V.positive_int("max_iters", max_iters, minimum=0), V.positive_int("chunk", chunk)
    workers = V.positive_int("workers", workers)
    x, y, w0 = column_data(key, n, d, ks, trials, d_max=d_max)
    d_pad = 4 * math.ceil(d / 4)
    nets = [(t, k) for t in range(trials) for k in ks]
    weights = {i: w0[net] for i, net in enumerate(nets)}
    outw = {i: np.asarray(output_weights(k, float(np.linalg.norm(y[t])), n)) for i, (t, k) in enumerate(nets)}
    done, success = np.zeros(len(nets), bool), np.zeros(len(nets), bool)
    iters, rel = np.full(len(nets), -1, np.int64), np.full(len(nets), np.nan)
    it = 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        while not done.all():
            steps = min(chunk, max_iters - it)
            if max_iters - it - steps <= chunk // 10:  # absorb a short remainder (one fewer compilation)
                steps = max_iters - it
            live = [int(i) for i in np.nonzero(~done)[0]]
            classes = max(1, min(WIDTH_CLASSES, n * d * sum(nets[i][1] for i in live) // CLASS_WORK))
            groups = _width_classes(live, {i: nets[i][1] for i in live}, classes)
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


def _pieces(settings: PhaseTransition) -> list[dict[str, Any]]:
    return [{"activation": a, "n": int(n), "d": int(d)}
            for a in settings.activations for n in settings.n_values for d in settings.ds]


def _compute(piece, settings: PhaseTransition) -> dict[str, Any]:
    out = fit_column(piece["activation"], piece["n"], piece["d"], settings.ks, trials=settings.trials,
                     lr=PAPER_STEP_SIZES[piece["activation"]], max_iters=settings.max_iters, tol=settings.tol,
                     key=jax.random.key(SEED), chunk=settings.chunk, d_max=max(settings.ds), workers=2)
    return {k: np.asarray(v).tolist() for k, v in out.items()}


def _assemble(settings: PhaseTransition, pieces, results) -> dict[str, Any]:
    out: dict[str, dict[str, dict[str, Any]]] = {k: {} for k in ("success", "median_iterations", "trial_success",
                                                                 "panel_seconds")}
    for a in settings.activations:
        for n in settings.n_values:
            cols = {p["d"]: r for p, r in zip(pieces, results) if p["activation"] == a and p["n"] == n}
            ok = np.stack([np.asarray(cols[d]["success"], bool) for d in settings.ds], axis=1)  # (k, d, trial)
            its = np.stack([np.asarray(cols[d]["iterations"]) for d in settings.ds], axis=1)
            for name, value in (("success", ok.mean(axis=2).tolist()),
                                ("median_iterations", np.median(its, axis=2).tolist()),
                                ("trial_success", ok.astype(int).tolist()),
                                ("panel_seconds", float(sum(cols[d].get("_seconds", 0.0) for d in settings.ds)))):
                out[name].setdefault(a, {})[str(n)] = value
    return {"n_values": list(settings.n_values), "activations": list(settings.activations), "ks": list(settings.ks),
            "ds": list(settings.ds), **out,
            "settings": {"step_sizes": {a: PAPER_STEP_SIZES[a] for a in settings.activations},
                         "seed": SEED, "diverged_threshold": DIVERGED,
                         "data": "x uniform on the unit sphere, y ~ N(0, I_n); data shared across k and "
                                 "activations within a trial (common random numbers)"}}


def plot_panels(result: dict[str, Any], axes=None):
    """Heat maps of the success probability (k vertical, d horizontal) with the curve kd = n."""
    acts, ns = result["activations"], result["n_values"]
    ks, ds = np.asarray(result["ks"]), np.asarray(result["ds"])
    if axes is None:
        fig, axes = plotting.subplots(len(ns), len(acts), width=3.6, height=3.3, squeeze=False,
                                      layout="constrained")
    else:
        fig = np.ravel(axes)[0].figure
    axes = np.asarray(axes).reshape(len(acts), len(ns))
    image = None
    for i, a in enumerate(acts):
        for j, n in enumerate(ns):
            ax = axes[i, j]
            prob = np.asarray(result["success"][a][str(n)])
            image = ax.imshow(prob, origin="lower", cmap="RdBu_r", vmin=0, vmax=1, aspect="auto",
                              extent=(ds[0] - 0.5, ds[-1] + 0.5, ks[0] - 0.5, ks[-1] + 0.5))
            grid = np.linspace(max(ds[0], n / ks[-1]), ds[-1], 200)
            ax.plot(grid, n / grid, color="white", linewidth=2)
            ax.set_xlim(ds[0] - 0.5, ds[-1] + 0.5)
            ax.set_ylim(ks[0] - 0.5, ks[-1] + 0.5)
            ax.set_title(f"{a}, n = {n}")
            ax.set_xlabel("input dimension d")
            ax.set_ylabel("hidden units k")
            ax.grid(False)
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8, label="success probability")
    return fig


def _plot(result: dict[str, Any], path: Path) -> None:
    save_figure(plot_panels(result), path, f"Figure 2 of Oymak & Soltanolkotabi (2020) — scale {result['scale']}")


register(Reproduction(
    name="phase-transition",
    experiment="phase_transition",
    description="success probability of GD fitting random labels over (k, d), with the curve kd = n "
                "(Oymak & Soltanolkotabi 2020, Figure 2)",
    pieces=_pieces,
    compute=_compute,
    assemble=_assemble,
    plot=_plot,
))
