"""Power-law fits on log–log data: the slopes the book's claims are about.

A rate such as ‖H‖ = Θ(m^{−1/2}) is checked by fitting log y = a·log x + b by least squares and
comparing the slope a (with its confidence interval) to the predicted exponent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    lx = np.log(V.numpy_array("x", x, integers=True).ravel())
    sd = V.numpy_array("relative_sd", relative_sd).ravel()
    if lx.shape != sd.shape:
        raise ValueError(f"x and relative_sd must have the same size, got {lx.size} and {sd.size}")
    centered = lx - lx.mean()
    denom = float(np.sum(centered**2))
    if denom == 0:
        raise ValueError("x must take at least two distinct values")
    return float(np.sqrt(np.sum((centered / denom) ** 2 * sd**2)))
