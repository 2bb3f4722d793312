"""Chapter 9, Section 4 of Oymak & Soltanolkotabi (2020) — phase transitions (Figure 2).

For every grid cell (k, d) and every trial: inputs uniform on S^{d−1} ⊂ ℝ^d, labels y ~ N(0, I_n),
the network f(x; W) = vᵀφ(Wx) with k hidden units initialized as in Theorem 2.1 (W₀ ~ N(0, 1),
v = ±‖y‖/√(kn), half of each sign, one zero for odd k), and gradient descent with a *constant*
step η (0.15 for softplus, 0.1 for ReLU) on L(W) = ½‖f(W) − y‖² (Eq. 2.1).  A run stops after
``max_iters`` updates (15 000 in the paper) or as soon as ‖f(W_τ) − y‖/‖y‖ < ``tol`` (2.5·10⁻³);
it is a success in the second case.  Runs whose residual becomes non-finite (η too large for the
curvature, which happens for tiny d) are failures and stop at once.

Engineering (how a 625-cell × 10-trial panel fits on a laptop CPU):

* one *column* (fixed d) is computed at a time: all k of the grid and all trials together;
* the data X, y of trial t are shared by all k of the column, and the columns slice the same
  Gaussian draws (common random numbers: each cell still averages independent trials, and
  neighbouring cells are compared on the same data);
* the hidden units of the networks are packed into rows of a dense array, two networks per row
  (a large k with a small one), so the elementwise work is proportional to Σk instead of
  k_max·len(ks), with no one-hot matmuls: per row, f for the first network is a masked sum over the
  row and f for the second is the rest;
* a ``lax.while_loop`` advances every row by up to ``chunk`` iterations, freezing each network
  (mask) as soon as it succeeds or diverges and stopping when all are done; between chunks the
  finished networks are dropped and the rest repacked (row counts and widths rounded up to a few
  bucket sizes so that few shapes are compiled);
* the trials of a column are split into two groups advanced in two threads (each XLA loop here
  runs on one core);
* float32 throughout (the stopping tolerance is 2.5·10⁻³, far above float32 resolution).

Seeds: a panel draws Gaussian arrays once from ``fold_in(key, n)`` and every column slices them
(:func:`column_data`); the activation does not enter, so softplus and ReLU panels see the same data
and initial weights.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validation as V
from ..activations import get_activation
from ..progress import progress
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


def pack(sizes: Mapping[int, int]) -> tuple[list[tuple[int, int]], int]:
    """Pair networks (id → number of hidden units) into rows of a common width.

    The width is max + min of the sizes (rounded up to a multiple of 4) and the pairing is
    two-pointer (largest with smallest while they fit), so every row holds one or two networks.
    Returns the rows as (first id, second id or −1) and the width.
    """
    if not sizes:
        raise ValueError("nothing to pack")
    order = sorted(sizes, key=lambda i: -sizes[i])
    width = _round_up(sizes[order[0]] + sizes[order[-1]], 4)
    rows, lo, hi = [], 0, len(order) - 1
    while lo <= hi:
        big = order[lo]
        if lo < hi and sizes[big] + sizes[order[hi]] <= width:
            rows.append((big, order[hi]))
            hi -= 1
        else:
            rows.append((big, -1))
        lo += 1
    return rows, width


DIVERGED = 1e8
"""A run whose relative residual exceeds this is declared diverged (a failure) and stopped.

With the paper's constant step sizes, GD is unstable for the smallest d (η·λ_max(JJᵀ) > 2): the
residual then grows geometrically, by a factor of order ten per step, and would overflow float32
a few dozen steps later.  Stopping at 10⁸ (a loss 10¹⁶ times its initial value, far beyond the
transient loss spikes of "catapult" dynamics) keeps every number finite.
"""


@partial(jax.jit, static_argnames=("activation",))
def _advance(xr, yr, ynorm, w, masks, status, it0, it_end, lr, tol, max_iters, *, activation):
    """Run GD on every packed row from iteration ``it0`` until ``it_end`` or until all are done.

    ``masks`` (rows, width, 2) holds v_s·1{slot s belongs to the first / second network}: the two
    outputs of a row are one batched matmul φ(Z)·masks, and the backpropagated residual is
    (R·masksᵀ) ⊙ φ'(Z) — no gathers, no scatters.
    """
    pair = get_activation(activation).value_and_prime  # fused (φ, φ'): one tanh and one log for softplus
    slot_net = masks != 0  # (rows, width, 2): which network each slot belongs to

    def cond(carry):
        it, _, (done, *_rest) = carry
        return (it < it_end) & ~jnp.all(done)

    def body(carry):
        it, w, (done, success, iters, rel) = carry
        z = jnp.einsum("rnd,rsd->rns", xr, w)
        p, dp = pair(z)
        res = jnp.einsum("rns,rsa->rna", p, masks) - yr[:, :, None]  # (rows, n, 2)
        rel_now = jnp.linalg.norm(res, axis=1) / ynorm[:, None]
        ok = rel_now < tol
        failed = ~jnp.isfinite(rel_now) | (rel_now > DIVERGED)
        newly = ~done & (ok | failed | (it >= max_iters))
        success = success | (~done & ok)
        iters = jnp.where(newly, it, iters)
        rel = jnp.where(newly, rel_now, rel)
        done = done | newly
        moving = jnp.any(slot_net & ~done[:, None, :], axis=-1)  # (rows, width)
        q = jnp.einsum("rna,rsa->rns", res, masks) * dp
        g = jnp.einsum("rns,rnd->rsd", q, xr)
        w = jnp.where(moving[:, :, None], w - lr * g, w)
        return it + 1, w, (done, success, iters, rel)

    return jax.lax.while_loop(cond, body, (it0, w, status))


def _split(rows: list[tuple[int, int, int]], nets: list[tuple[int, int]], workers: int
           ) -> list[list[tuple[int, int, int]]]:
    """Partition packed rows into ``workers`` groups of whole trials with balanced neuron counts."""
    load: dict[int, int] = {}
    for t, a, b in rows:
        load[t] = load.get(t, 0) + nets[a][1] + (nets[b][1] if b >= 0 else 0)
    groups: list[list[int]] = [[] for _ in range(min(workers, len(load)))]
    totals = [0] * len(groups)
    for t in sorted(load, key=lambda t: -load[t]):  # greedy: largest trial to the lightest group
        g = totals.index(min(totals))
        groups[g].append(t)
        totals[g] += load[t]
    return [[row for row in rows if row[0] in set(g)] for g in groups if g]


def _run_rows(rows, nets, weights, outw, x, y, d, d_pad, width, it, it_end, lr, tol, max_iters, activation):
    """Assemble the arrays of one group of packed rows and advance them (one ``_advance`` call)."""
    n = x.shape[1]
    rb = _row_bucket(len(rows))
    xr = np.zeros((rb, n, d_pad), np.float32)
    yr = np.zeros((rb, n), np.float32)
    wr = np.zeros((rb, width, d_pad), np.float32)
    masks = np.zeros((rb, width, 2), np.float32)
    st_done = np.ones((rb, 2), bool)
    for r, (t, a, b) in enumerate(rows):
        xr[r, :, :d], yr[r] = x[t], y[t]
        ka = nets[a][1]
        wr[r, :ka, :d], masks[r, :ka, 0] = weights[a], outw[a]
        st_done[r, 0] = False
        if b >= 0:
            kb = nets[b][1]
            wr[r, ka:ka + kb, :d], masks[r, ka:ka + kb, 1] = weights[b], outw[b]
            st_done[r, 1] = False
    ynorm = np.maximum(np.linalg.norm(yr, axis=1), 1e-30).astype(np.float32)
    status = (jnp.asarray(st_done), jnp.zeros((rb, 2), bool), jnp.full((rb, 2), -1, jnp.int32),
              jnp.full((rb, 2), jnp.nan, jnp.float32))
    out = _advance(jnp.asarray(xr), jnp.asarray(yr), jnp.asarray(ynorm), jnp.asarray(wr), jnp.asarray(masks),
                   status, jnp.int32(it), jnp.int32(it_end), jnp.float32(lr), jnp.float32(tol),
                   jnp.int32(max_iters), activation=activation)
    return jax.tree_util.tree_map(np.asarray, out)


def fit_column(activation: str, n: int, d: int, ks: Sequence[int], *, trials: int, lr: float, max_iters: int,
               tol: float, key: Array, chunk: int = 1000, d_max: int | None = None, workers: int = 2
               ) -> dict[str, np.ndarray]:
    """Gradient descent for every (k, trial) of column d; see the module docstring.

    ``d_max``: the largest d of the panel (columns slice common random arrays, see
    :func:`column_data`).  ``workers``: the trials are split into this many groups advanced in
    parallel threads (XLA runs each of these small loops on one core; two groups use both cores of
    a laptop).  Returns arrays of shape (len(ks), trials): ``success`` (bool), ``iterations`` (the τ
    at which the run stopped: success, divergence or ``max_iters``) and ``rel_error``
    (‖f(W_τ) − y‖/‖y‖ then).
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
            rows, width = [], 0
            for t in range(trials):  # rows never mix trials: each trial has its own X and y
                sizes = {i: nets[i][1] for i in np.nonzero(~done)[0] if nets[i][0] == t}
                if sizes:
                    r, wdt = pack(sizes)
                    rows += [(t, a, b) for a, b in r]
                    width = max(width, wdt)
            it_end = min(it + chunk, max_iters + 1)
            if max_iters + 1 - it_end <= chunk // 10:  # absorb a short remainder (one fewer compilation)
                it_end = max_iters + 1
            groups = _split(rows, nets, workers)
            futures = [pool.submit(_run_rows, g, nets, weights, outw, x, y, d, d_pad, width, it, it_end, lr, tol,
                                   max_iters, activation) for g in groups]
            next_it = it
            for group, future in zip(groups, futures, strict=True):
                it_out, w_out, (s_done, s_success, s_iters, s_rel) = future.result()
                next_it = max(next_it, int(it_out))
                for r, (_, a, b) in enumerate(group):
                    for slot, net in ((0, a), (1, b)):
                        if net < 0:
                            continue
                        if s_done[r, slot]:
                            done[net], success[net] = True, bool(s_success[r, slot])
                            iters[net], rel[net] = int(s_iters[r, slot]), float(s_rel[r, slot])
                        else:
                            start = 0 if slot == 0 else nets[a][1]
                            weights[net] = w_out[r, start:start + nets[net][1], :d]
            it = next_it
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
