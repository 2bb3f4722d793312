"""Power-law fits on log–log data and the one rule that decides a rate claim.

A rate such as ‖H‖ = Θ(m^{−1/2}) is checked by fitting log y = a·log x + b by least squares
(:func:`power_law_fit`) and comparing the slope a, with its 95% confidence interval, to a window
fixed before measuring (:class:`RateWindow`, :func:`decide_rate`):

* ``passed`` — the fitted exponent lies inside the window **and** the 95% interval excludes every
  rival exponent (the data tell the prediction from each rival);
* ``failed`` — the fitted exponent lies outside the window;
* ``inconclusive`` — otherwise: the exponent is in the window but some rival is still inside the
  95% interval.

The window is the predicted exponent ± a finite-size allowance that the chapter justifies in words
(log factors hidden by Õ, finite-width corrections); it never depends on the fit's standard error,
so a noisier measurement can only make a claim inconclusive, never easier to pass.  A window must
contain the prediction and no rival (:class:`RateWindow` raises ``ValueError`` otherwise).

Also here: :func:`log_factor_allowance` (how much a factor (log x)^p moves a log–log slope — the
usual finite-size allowance for Õ rates), :func:`ci_position` (where a value lies relative to a fit's
interval), :func:`verdict_stability` (the share of seed-bootstrap resamples that reach a verdict; a rate claim
passes only if it is at least :data:`STABILITY_MIN`) and :func:`fit_geometric_rate` (q of y_t ≈ C·qᵗ).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats

from . import _validation as V


@dataclass(frozen=True)
class PowerLawFit:
    """y ≈ exp(intercept) · x^slope.

    Attributes:
        slope: fitted exponent a.
        intercept: b in log y = a log x + b.
        stderr: standard error of the slope.
        ci_low: lower end of the ``confidence`` interval of the slope (Student t).
        ci_high: upper end of that interval.
        r2: coefficient of determination of the log–log fit.
        n: number of points.
    """

    slope: float
    intercept: float
    stderr: float
    ci_low: float
    ci_high: float
    r2: float
    n: int

    def predict(self, x: Any) -> np.ndarray:
        return np.exp(self.intercept) * np.asarray(x, dtype=np.float64) ** self.slope


def power_law_fit(x: Any, y: Any, *, confidence: float = 0.95) -> PowerLawFit:
    """Least-squares fit of log y against log x (all points, e.g. several seeds per x)."""
    x = V.numpy_array("x", x, integers=True).ravel()
    y = V.numpy_array("y", y, integers=True).ravel()
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same number of points, got {x.size} and {y.size}")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("x and y must be positive for a log–log fit")
    if np.unique(x).size < 2:
        raise ValueError("x must take at least two distinct values")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    lx, ly = np.log(x), np.log(y)
    res = stats.linregress(lx, ly)
    n = x.size
    half = stats.t.ppf(0.5 + confidence / 2, df=max(n - 2, 1)) * res.stderr if n > 2 else np.inf
    return PowerLawFit(float(res.slope), float(res.intercept), float(res.stderr), float(res.slope - half),
                       float(res.slope + half), float(res.rvalue**2), int(n))


def slope_standard_error(x: Any, relative_sd: Any) -> float:
    """Standard error of a least-squares log–log slope when each log y has known noise.

    If y_i = y·(1 + e_i) with independent e_i of standard deviation ``relative_sd[i]`` (so
    log y_i has noise ≈ e_i), the fitted slope is Σ c_i log y_i with c_i = (l_i − l̄)/Σ_j(l_j − l̄)²,
    l = log x, and its standard deviation is (Σ c_i² sd_i²)^{1/2}.  Used to set the tolerance of a
    claim "slope = 0" from the central-limit fluctuations of a Monte-Carlo quantity.
    """
    sd = V.numpy_array("relative_sd", relative_sd).ravel()
    c = slope_weights(x, size=sd.size, other="relative_sd")
    return float(np.sqrt(np.sum(c**2 * sd**2)))


def slope_weights(x: Any, *, size: int | None = None, other: str = "y") -> np.ndarray:
    """The weights c_i of a least-squares log–log slope, Σ c_i log y_i: c_i = (l_i − l̄)/Σ_j(l_j − l̄)²,
    l = log x (shape of ``x`` flattened).  ``size``: the number of y values, checked against x."""
    lx = np.log(V.numpy_array("x", x, integers=True).ravel())
    if size is not None and lx.size != size:
        raise ValueError(f"x and {other} must have the same size, got {lx.size} and {size}")
    centered = lx - lx.mean()
    denom = float(np.sum(centered**2))
    if denom == 0:
        raise ValueError("x must take at least two distinct values")
    return centered / denom


def expected_slope(x: Any, mean_log_y: Any) -> float:
    """Expectation of the least-squares log–log slope when E[log y_i] = ``mean_log_y[i]``: Σ c_i E[log y_i]
    with the weights of :func:`slope_weights` (the slope is linear in the log y_i)."""
    mu = V.numpy_array("mean_log_y", mean_log_y).ravel()
    return float(np.sum(slope_weights(x, size=mu.size, other="mean_log_y") * mu))


@dataclass(frozen=True)
class SlopeLaw:
    """The law of a least-squares log–log slope, known before measuring, and the window it gives.

    Attributes:
        predicted: the mean of the fitted slope.
        sd: its standard deviation.
        half_width: ``sds``·sd plus the measurement allowance (see :func:`slope_law_window`).
        allowance: the window's justification in words (for :func:`ntkbook.claims.rate`).
    """

    predicted: float
    sd: float
    half_width: float
    allowance: str

    @property
    def window(self) -> tuple[float, float]:
        """(predicted − half_width, predicted + half_width)."""
        return self.predicted - self.half_width, self.predicted + self.half_width


def slope_law_window(x: Any, mean_log_y: Any, var_log_y: Any, *, sds: float = 4.0, log_tolerance: float = 0.0,
                     law: str) -> SlopeLaw:
    """A rate window from the exact law of the data: the fitted slope Σ c_i log y_i of independent
    log y_i with known means and variances has mean :func:`expected_slope` and standard deviation
    :func:`slope_standard_error`; the window is the mean ± ``sds`` sd, widened by Σ|c_i|·``log_tolerance``
    when each measured log y_i may differ from the modelled one by up to ``log_tolerance`` (e.g. an
    iterative solver's tolerance).  ``law`` names where the moments come from (recorded in the allowance).
    """
    var = V.numpy_array("var_log_y", var_log_y).ravel()
    if np.any(var < 0):
        raise ValueError("var_log_y must be non-negative")
    predicted = expected_slope(x, mean_log_y)
    sd = slope_standard_error(x, np.sqrt(var))
    tol = float(log_tolerance)
    if not math.isfinite(tol) or tol < 0:
        raise ValueError(f"log_tolerance must be finite and >= 0, got {log_tolerance}")
    half = V.positive_float("sds", sds) * sd + float(np.sum(np.abs(slope_weights(x)))) * tol
    allowance = f"mean ± {sds:g} sd of the slope from {law} (sd {sd:.2g})"
    if tol:
        allowance += f", plus Σ|c_i|·{tol:.3g} for the measurement tolerance"
    return SlopeLaw(predicted=predicted, sd=sd, half_width=half, allowance=allowance)


def log_factor_allowance(x: Any, power: float = 1.0) -> float:
    """How much a factor (log x)^power moves a fitted log–log slope over the range of ``x``:

    power · log(log x_max / log x_min) / log(x_max / x_min).

    Õ(m^a) hides such factors, so a quantity that is Õ(m^a) may show a fitted exponent that differs
    from a by this much over the sampled widths; a pure (log m)^p law has exactly this slope between
    two widths.  This is the standard finite-size allowance of an Õ rate claim (it depends only on
    the sampled x, never on the measurements).
    """
    xs = V.numpy_array("x", x, integers=True).ravel()
    if xs.size == 0:
        raise ValueError("x must not be empty")
    lo, hi = float(xs.min()), float(xs.max())
    if lo <= 1 or hi <= lo:
        raise ValueError(f"x (widths) must contain at least two distinct values > 1, got range [{lo:g}, {hi:g}]")
    return float(power * math.log(math.log(hi) / math.log(lo)) / math.log(hi / lo))


def ci_position(fit: PowerLawFit, value: float) -> Literal["below", "inside", "above"]:
    """Where ``value`` lies relative to the fit's confidence interval [ci_low, ci_high] of the slope:
    ``"below"`` (value < ci_low), ``"above"`` (value > ci_high) or ``"inside"`` (closed interval)."""
    value = float(value)
    if value < fit.ci_low:
        return "below"
    if value > fit.ci_high:
        return "above"
    return "inside"


@dataclass(frozen=True)
class RateWindow:
    """A rate claim's window, fixed before measuring: the half-open interval [low, high).

    Half-open so that adjacent windows never share a point: the Θ(1) window [−1/4, 1/4) and a decay
    window [−2, −1/4) or [−3/4, −1/4) meet at −1/4, the point half-way between 0 and −1/2, and with
    both ends closed one fitted exponent of exactly −1/4 would confirm Θ(1) and decay at once.  With
    every window closed below and open above, windows that meet tile the exponent axis, and each
    exponent belongs to at most one of them (the standard convention for a partition of the line;
    which side gets the meeting point is immaterial for a continuous fit, that it is one side is not).

    Attributes:
        predicted: the exponent the theory predicts.
        low: lower end of the window (included).
        high: upper end of the window (excluded).
        rivals: (name, exponent) pairs the data must rule out, e.g. ``(("Θ(1)", 0.0),)``.
        allowance: the reason for the window's width, in words (finite-size corrections, log
            factors); the chapter states it next to the claim.

    Raises:
        ValueError: if the window is empty or not finite, does not contain ``predicted``, contains a
            rival exponent, names no rival, or ``allowance`` is empty.
    """

    predicted: float
    low: float
    high: float
    rivals: tuple[tuple[str, float], ...]
    allowance: str

    def __post_init__(self) -> None:
        for name in ("predicted", "low", "high"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
                raise TypeError(f"{name} must be a real number, got {value!r}")
            if not math.isfinite(float(value)):
                raise ValueError(f"{name} must be finite, got {value}")
            object.__setattr__(self, name, float(value))
        if not self.low < self.high:
            raise ValueError(f"window must be (low, high) with low < high, got ({self.low}, {self.high})")
        if not self.low <= self.predicted < self.high:
            raise ValueError(f"window [{self.low}, {self.high}) does not contain the predicted exponent "
                             f"{self.predicted}")
        if not isinstance(self.allowance, str) or not self.allowance.strip():
            raise ValueError("allowance must be a non-empty text justifying the window's width")
        rivals = tuple((str(n), float(e)) for n, e in self.rivals)
        if not rivals:
            raise ValueError("rivals must name at least one rival exponent the data must rule out")
        for name, exponent in rivals:
            if not math.isfinite(exponent):
                raise ValueError(f"rival {name!r} must have a finite exponent, got {exponent}")
            if self.low <= exponent < self.high:
                raise ValueError(f"window [{self.low}, {self.high}) contains the rival exponent {name} = "
                                 f"{exponent}: the claim could pass for the rival")
        object.__setattr__(self, "rivals", rivals)

    def contains(self, exponent: float) -> bool:
        """Whether low ≤ exponent < high."""
        return self.low <= float(exponent) < self.high


def rate_window(predicted: float, window: tuple[float, float], rivals: Mapping[str, float] | Any, *,
                allowance: str) -> RateWindow:
    """A validated :class:`RateWindow` [low, high) from ``window = (low, high)`` and ``rivals`` = name → exponent."""
    if isinstance(window, (str, bytes)) or not hasattr(window, "__len__") or len(window) != 2:
        raise TypeError(f"window must be a pair (low, high), got {window!r}")
    pairs = tuple(rivals.items()) if isinstance(rivals, Mapping) else tuple(rivals)
    return RateWindow(predicted, window[0], window[1], pairs, allowance)


@dataclass(frozen=True)
class RateDecision:
    """The verdict of :func:`decide_rate`.

    Attributes:
        status: ``"passed"``, ``"failed"`` or ``"inconclusive"``.
        fit: the power-law fit decided on.
        window: the window it was judged against.
        rivals_in_ci: names of the rivals inside the fit's confidence interval.
        reasons: sentences explaining the status.
    """

    status: Literal["passed", "failed", "inconclusive"]
    fit: PowerLawFit
    window: RateWindow
    rivals_in_ci: tuple[str, ...]
    reasons: tuple[str, ...]


def decide_rate(fit: PowerLawFit, window: RateWindow) -> RateDecision:
    """The rate rule of the book (the only place it is written down).

    passed: ``fit.slope`` in the window and no rival exponent inside [fit.ci_low, fit.ci_high];
    failed: ``fit.slope`` outside the window (whatever the interval);
    inconclusive: ``fit.slope`` in the window but some rival inside the interval.
    """
    if not isinstance(window, RateWindow):
        raise TypeError(f"window must be a RateWindow (see rate_window), got {type(window).__name__}")
    inside = [name for name, exponent in window.rivals if ci_position(fit, exponent) == "inside"]
    where = f"fitted exponent {fit.slope:.4g}"
    if not window.contains(fit.slope):
        side = "below" if fit.slope < window.low else "above"
        reasons = [f"{where} is {side} the window [{window.low:.4g}, {window.high:.4g})"]
        status = "failed"
    elif inside:
        reasons = [f"{where} is inside the window, but the 95% interval [{fit.ci_low:.4g}, {fit.ci_high:.4g}] "
                   f"contains the rival{'s' if len(inside) > 1 else ''} " + ", ".join(inside)]
        status = "inconclusive"
    else:
        reasons = [f"{where} is inside the window and the 95% interval excludes every rival"]
        status = "passed"
    return RateDecision(status, fit, window, tuple(inside), tuple(reasons))


STABILITY_RESAMPLES = 1000
"""Seed-bootstrap resamples behind :func:`verdict_stability`."""
STABILITY_MIN = 0.95
"""The share of resamples that must reach a rate claim's verdict for it to pass (``ntkbook.claims``)."""


def verdict_stability(x: Any, y: Any, window: RateWindow, status: str, *, resamples: int = STABILITY_RESAMPLES,
                      seed: int = 0) -> float:
    """The share of seed-bootstrap resamples whose verdict under :func:`decide_rate` is ``status``.

    Each resample keeps every x and draws, for each distinct x, as many points as it has from its own points
    with replacement (the seeds of one width resampled among themselves); the log–log fit and the rule of
    :func:`decide_rate` are applied to it (vectorized: the slope is linear in log y).  A verdict that a few
    lucky seeds decide has a low share.  With one point per x every resample is the data itself (share 1).

    Args:
        x, y: the points of the claim (positive, same size).
        window: the claim's window.
        status: the verdict whose stability is measured.
        resamples: number of resamples.
        seed: seed of the NumPy generator (fixed: two executions record the same share).
    """
    lx = np.log(V.numpy_array("x", x, integers=True).ravel())
    ly = np.log(V.numpy_array("y", y, integers=True).ravel())
    resamples = V.positive_int("resamples", resamples)
    rng = np.random.default_rng(seed)
    idx = np.empty((resamples, lx.size), dtype=np.int64)
    for value in np.unique(lx):
        members = np.flatnonzero(lx == value)
        idx[:, members] = members[rng.integers(0, members.size, size=(resamples, members.size))]
    lyb = ly[idx]
    centered = lx - lx.mean()
    sxx = float(np.sum(centered**2))
    slope = lyb @ centered / sxx
    resid = lyb - lyb.mean(axis=1, keepdims=True) - slope[:, None] * centered[None, :]
    n = lx.size
    if n > 2:
        half = stats.t.ppf(0.975, df=n - 2) * np.sqrt(np.sum(resid**2, axis=1) / (n - 2) / sxx)
    else:
        half = np.full(resamples, np.inf)
    inside = (slope >= window.low) & (slope < window.high)
    rival_in_ci = np.zeros(resamples, bool)
    for _, exponent in window.rivals:
        rival_in_ci |= (slope - half <= exponent) & (exponent <= slope + half)
    verdict = np.where(~inside, "failed", np.where(rival_in_ci, "inconclusive", "passed"))
    return float(np.mean(verdict == status))


#: The standard windows of a Θ(1)-versus-decay claim (``nb.claims.order``): half-way between the
#: prediction and the nearest rival, so the data decide for whichever exponent is nearer and the
#: 95% interval must rule out the other.
ORDER_WINDOWS: dict[str, RateWindow] = {
    "constant": RateWindow(0.0, -0.25, 0.25, (("m^-1/2", -0.5), ("m^+1/2", 0.5)),
                           "Θ(1) against the slowest decay (or growth) the book's rates take, m^∓1/2: "
                           "the window ends half-way between 0 and ∓1/2"),
    "decay": RateWindow(-0.5, -2.0, -0.25, (("Θ(1)", 0.0),),
                        "a decay at least as fast as m^-1/4 against Θ(1): the window starts half-way between "
                        "the generic rate m^-1/2 and 0 and ends at m^-2"),
}


def fit_geometric_rate(t: Any, y: Any) -> float:
    """The rate q of y_t ≈ C·qᵗ: exp of the least-squares slope of log y_t against t.

    Args:
        t: step indices (at least two distinct values).
        y: positive values at those steps (e.g. a loss or residual norm on the steps the caller
            selected, after the transient and above the floating-point floor).
    """
    ts = V.numpy_array("t", t, integers=True).ravel()
    ys = V.numpy_array("y", y, integers=True).ravel()
    if ts.shape != ys.shape:
        raise ValueError(f"t and y must have the same number of points, got {ts.size} and {ys.size}")
    if np.any(ys <= 0):
        raise ValueError("y must be positive to fit a geometric rate")
    if np.unique(ts).size < 2:
        raise ValueError("t must take at least two distinct values")
    return float(math.exp(np.polyfit(ts, np.log(ys), 1)[0]))
