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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import Any

import jax
import numpy as np
from scipy.optimize import isotonic_regression

from .. import _validation as V
from ..activations import get_activation
from ..models.oymak_init import output_weights
from ..progress import progress
from ..scales import PhaseTransition
from ..training import StopRule, train

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
"""Networks are padded within width classes — the live networks sorted by k are cut into at most this many
contiguous classes of about equal total width, each padded to its own largest k (the padding then costs ~10% of
the work instead of ~2× with one common width)."""

CLASS_WORK = 2**18
"""Multiply–adds per iteration, n·d·Σk over the live networks, that one width class must have at least
(``_class_count``).  Below it an iteration of the compiled loop costs its fixed overhead, not its arithmetic,
and every extra class costs one more loop and one more compilation: a ci column (n = 20: n·d·Σk ≤ 4·10⁴) is
advanced as one class (25.8 → 16.2 s of CPU for the ci panels), a book column (n = 100, 250 networks:
n·d·Σk ≥ 3·10⁶) as :data:`WIDTH_CLASSES` classes.  Each network's iteration is its own: the classes change only
the padded shapes, hence float32 rounding (the ci panels with one class and with eight: the same outcomes and
stopping iterations in every cell)."""


def _class_count(live_work: int) -> int:
    """How many width classes live networks with n·d·Σk = ``live_work`` are cut into."""
    return max(1, min(WIDTH_CLASSES, live_work // CLASS_WORK))


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
            groups = _width_classes(live, {i: nets[i][1] for i in live},
                                    _class_count(n * d * sum(nets[i][1] for i in live)))
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


def panel(activation: str, n: int, settings: PhaseTransition, key: Array) -> dict[str, np.ndarray]:
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


def crossing(ks: Sequence[int], probability: Sequence[float], level: float = 0.5) -> float:
    """The k at which the success probability of one column crosses ``level``.

    The probabilities (one per k, ``ks`` increasing) are first made non-decreasing in k by isotonic
    regression (``scipy.optimize.isotonic_regression``, pool-adjacent-violators: trial noise can
    make a raw column non-monotone), then the crossing is interpolated linearly between the last k
    below ``level`` and the next one.  Returns ``-inf`` when the fit is already ≥ ``level`` at the
    smallest k and ``+inf`` when it never reaches ``level`` (the crossing lies outside the grid).
    """
    ks = np.asarray(ks, dtype=np.float64)
    p = np.asarray(probability, dtype=np.float64)
    if ks.ndim != 1 or p.shape != ks.shape or ks.size < 2:
        raise ValueError(f"ks and probability must be 1-d of equal length ≥ 2, got {ks.shape} and {p.shape}")
    if np.any(np.diff(ks) <= 0):
        raise ValueError("ks must be strictly increasing")
    V.positive_float("level", level)
    fit = isotonic_regression(p).x
    above = np.nonzero(fit >= level)[0]
    if above.size == 0:
        return math.inf
    j = int(above[0])
    if j == 0:
        return -math.inf
    return float(ks[j - 1] + (level - fit[j - 1]) / (fit[j] - fit[j - 1]) * (ks[j] - ks[j - 1]))


def transition_location(ks: Sequence[int], ds: Sequence[int], n: int, success: Any, *, level: float = 0.5,
                        resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> dict[str, Any]:
    """Where the success probability crosses ``level``, with bootstrap intervals over the trials.

    ``success``: per-trial outcomes, shape (len(ks), len(ds), trials) (the ``success`` of
    :func:`panel`).  For every column d: k*(d) = :func:`crossing` of the trial-averaged column and the
    ratio r(d) = k*(d)·d/n (r = 1 on the curve kd = n of Figure 2); pooled: the mean ratio r̄ over the
    columns whose crossing lies inside the grid (``located``; a column whose success never reaches ``level``
    only says r(d) > k_max·d/n and is reported, not averaged, since its crossing is unknown).
    Intervals: percentile bootstrap — ``resamples`` times, the trials of every column are
    resampled with replacement (the same resampled trials for all k of a column: a trial's data are
    shared by its k), and k*, r and r̄ recomputed; the ``(1 ± confidence)/2`` quantiles
    (``method="inverted_cdf"``, so that infinite crossings outside the grid are ordered, not averaged).
    Returns ``{"k_star", "ratio", "ratio_low", "ratio_high"}`` (lists over ds), ``"mean_ratio"``,
    ``"mean_low"``, ``"mean_high"`` (nan when no column is located), ``"located"``, and the inputs'
    ``ds``, ``ks``, ``trials``, ``resamples``, ``confidence``, ``level``.
    """
    ks = np.asarray(ks)
    ds = np.asarray(ds)
    ok = np.asarray(success, dtype=np.float64)
    if ok.ndim != 3 or ok.shape[:2] != (ks.size, ds.size):
        raise ValueError(f"success must have shape (len(ks), len(ds), trials) = ({ks.size}, {ds.size}, ·), "
                         f"got {ok.shape}")
    n = V.positive_int("n", n)
    resamples = V.positive_int("resamples", resamples)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    trials = ok.shape[2]

    def ratios(sample: np.ndarray) -> np.ndarray:
        return np.array([crossing(ks, sample[:, j].mean(axis=1), level) * ds[j] / n for j in range(ds.size)])

    point = ratios(ok)
    located = np.isfinite(point)
    rng = np.random.default_rng(seed)
    boot = np.empty((resamples, ds.size))
    for b in range(resamples):
        idx = rng.integers(0, trials, size=(ds.size, trials))
        boot[b] = ratios(np.stack([ok[:, j, idx[j]] for j in range(ds.size)], axis=1))
    with np.errstate(invalid="ignore"):
        mean_boot = boot[:, located].mean(axis=1) if located.any() else np.full(resamples, np.nan)
    alpha = (1 - confidence) / 2
    q = lambda a: np.quantile(a, [alpha, 1 - alpha], axis=0, method="inverted_cdf")  # noqa: E731
    low, high = q(boot)
    mean_low, mean_high = (q(np.where(np.isnan(mean_boot), np.inf, mean_boot)) if located.any()
                           else (np.nan, np.nan))
    return {"ds": ds.tolist(), "k_star": (point * n / ds).tolist(), "ratio": point.tolist(),
            "ratio_low": low.tolist(), "ratio_high": high.tolist(), "located": located.tolist(),
            "mean_ratio": float(point[located].mean()) if located.any() else math.nan,
            "mean_low": float(mean_low), "mean_high": float(mean_high), "resamples": resamples,
            "confidence": confidence, "level": level, "ks": ks.tolist(), "trials": trials}


PAPER_WINDOW = (1.0, 1.5)
"""The paper's statement as a window for the 50% crossing r̄ = k*d/n.  Section 4 says that networks "can fit
to random data as long as the number of parameters exceed the size of the training dataset" (both activations
it tests), that the success region of panel (a) (softplus, n = 100) is "tightly surrounded by the n = kd
curve", and that kd > (1 + ε)n "may suffice"; we read these as 1 ≤ r̄ ≤ 1.5 (fixed before measuring; r < 1
is impossible for generic data, fewer parameters than equations).  The ReLU panels (c), (d) are not described
in the text: for ReLU the window reads the general sentence only."""


def location_verdict(location: Mapping[str, Any], window: tuple[float, float] = PAPER_WINDOW) -> str:
    """``"agrees"`` when the bootstrap interval of the pooled ratio r̄ (:func:`transition_location`) lies
    inside ``window``, ``"disagrees"`` when it lies wholly outside, else ``"undecided"``."""
    low, high = float(location["mean_low"]), float(location["mean_high"])
    if math.isnan(low) or math.isnan(high):  # no column located
        return "undecided"
    if window[0] <= low and high <= window[1]:
        return "agrees"
    if high < window[0] or low > window[1]:
        return "disagrees"
    return "undecided"


BANDS = ((0.0, 0.5), (0.5, 1.0), (1.0, 1.5), (1.5, 2.0), (2.0, 3.0), (3.0, math.inf))
"""Bands of kd/n for the chapter's table of mean success probability."""


def band_table(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rows (activation, n, mean success probability over the cells of each band of kd/n in :data:`BANDS`)
    of a ``phase-transition`` reproduction result."""
    kd = np.outer(result["ks"], result["ds"])
    rows = []
    for a in result["activations"]:
        for n in result["n_values"]:
            prob = np.asarray(result["success"][a][str(n)])
            row: dict[str, Any] = {"activation": a, "n": n}
            for lo, hi in BANDS:
                cells = (kd > lo * n) & (kd <= hi * n)
                if cells.any():
                    row[f"kd/n ∈ ({lo:g}, {hi:g}]"] = float(prob[cells].mean())
            rows.append(row)
    return rows


def locations(result: Mapping[str, Any], *, resamples: int = 2000, seed: int = 0
              ) -> dict[tuple[str, int], dict[str, Any]]:
    """:func:`transition_location` of every panel (activation, n) of a ``phase-transition`` result (its
    per-trial outcomes ``trial_success``)."""
    return {(a, int(n)): transition_location(result["ks"], result["ds"], int(n),
                                             np.asarray(result["trial_success"][a][str(n)], bool),
                                             resamples=resamples, seed=seed)
            for a in result["activations"] for n in result["n_values"]}


def location_table(locs: Mapping[tuple[str, int], Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (activation, n, d): k*, r = k*d/n and its bootstrap interval; one row per panel with the
    mean r̄ (d = "mean")."""
    rows = []
    for (a, n), loc in locs.items():
        for j, d in enumerate(loc["ds"]):
            rows.append({"activation": a, "n": n, "d": str(d), "k*": loc["k_star"][j], "r = k*d/n": loc["ratio"][j],
                         "95% low": loc["ratio_low"][j], "95% high": loc["ratio_high"][j]})
        rows.append({"activation": a, "n": n, "d": "mean", "k*": math.nan, "r = k*d/n": loc["mean_ratio"],
                     "95% low": loc["mean_low"], "95% high": loc["mean_high"]})
    return rows


LOCATION_CLAIMS: dict[str, float] = {"relu": PAPER_WINDOW[1], "softplus": PAPER_WINDOW[0]}
"""The location claim per activation — the 95% interval of r̄ lies wholly above this value.

ReLU: above 1.5 — the erratum "ReLU networks need about twice as many parameters as data points, not
slightly more" (first measured on this book's grid at
n = 100: r̄ = 1.92 [1.77, 2.03]). softplus: above 1 — the crossing lies right of the curve kd = n, as the
paper's kd > (1 + ε)n says; whether it is within 1.5 (the :data:`PAPER_WINDOW` reading of "tightly") the data
cannot decide (r̄ = 1.44 [1.40, 1.52] at n = 100), and the table says so instead of a claim."""


def location_claim_holds(location: Mapping[str, Any], activation: str) -> bool:
    """Whether the lower end of the bootstrap interval of r̄ lies above :data:`LOCATION_CLAIMS` [activation]."""
    low = float(location["mean_low"])
    return not math.isnan(low) and low > LOCATION_CLAIMS[activation]


def location_criterion(loc: Mapping[str, Any], window: tuple[float, float] = PAPER_WINDOW) -> str:
    """The words of the location claim: r̄ with its interval, the window, and the verdict."""
    return (f"r̄ = k*d/n = {loc['mean_ratio']:.3g}, 95% bootstrap interval [{loc['mean_low']:.3g}, "
            f"{loc['mean_high']:.3g}]: inside [{window[0]}, {window[1]}] (agrees with the paper) or wholly outside "
            f"(erratum), not straddling its edge; measured: {location_verdict(loc, window)}")


def erratum_text(loc: Mapping[str, Any], activation: str, n: int) -> str:
    """The erratum recorded when the measured 50% crossing lies wholly outside :data:`PAPER_WINDOW`."""
    per_d = ", ".join(f"d = {d}: {r:.3g}" for d, r in zip(loc["ds"], loc["ratio"], strict=True))
    return (f"Section 4 says that networks 'can fit to random data as long as the number of parameters exceed "
            f"the size of the training dataset', for both activations it tests (the phrase 'tightly surrounded "
            f"by the n = kd curve' is said of the softplus panel (a) only; the ReLU panels are not described). "
            f"Measured with the paper's steps and success criterion ({activation}, n = {n}, "
            f"k ∈ {min(loc['ks'])}..{max(loc['ks'])}, d ∈ {loc['ds']}, {loc['trials']} trials per cell), "
            f"success crosses 1/2 at kd/n = {loc['mean_ratio']:.3g} (95% bootstrap "
            f"interval over trials [{loc['mean_low']:.3g}, {loc['mean_high']:.3g}]; per column {per_d}), "
            f"wholly outside [{PAPER_WINDOW[0]}, {PAPER_WINDOW[1]}].")
