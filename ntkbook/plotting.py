"""The book's house style and the three plots it keeps drawing.

* :func:`power_law` — measurements against a size on log–log axes, the fitted line and the predicted
  slope drawn as a dashed reference;
* :func:`measured_vs_bound` — every sample as a point (bound, measured) with the diagonal: a bound
  holds when all points lie under it;
* :func:`use_style` — colour-blind-safe palette (Okabe–Ito), readable sizes, light grid;
* :func:`label_ticks` — ticks of a log x-axis at the measured values (widths, radii) only.
"""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

from .fitting import PowerLawFit, power_law_fit

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
"""Okabe–Ito colours (distinguishable with every common colour-vision deficiency)."""


def use_style() -> None:
    """Apply the house style to matplotlib (idempotent)."""
    mpl.rcParams.update({
        "figure.figsize": (6.4, 4.0),
        "figure.dpi": 110,
        "savefig.dpi": 150,
        "savefig.bbox": "tight",
        "font.size": 10,
        "axes.titlesize": 11,
        "axes.labelsize": 10,
        "legend.fontsize": 9,
        "legend.frameon": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": mpl.cycler(color=PALETTE),
        "lines.linewidth": 1.6,
        "lines.markersize": 5,
    })


def subplots(ncols: int = 1, nrows: int = 1, *, width: float = 6.4, height: float = 4.0, **kw: Any):
    """``plt.subplots`` with the house size per panel."""
    use_style()
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), **kw)
    return fig, axes


def label_ticks(ax: Any, values: Any) -> None:
    """Major x-ticks of ``ax`` at the distinct ``values`` (any shape: the measured widths or radii), labelled
    ``{v:g}``, and no minor tick labels (a log axis would otherwise label 2×10¹, 3×10¹, ...).

    Raises:
        ValueError: if ``values`` is empty.
    """
    values = sorted({float(v) for v in np.ravel(values)})
    if not values:
        raise ValueError("values must hold at least one tick position")
    ax.set_xticks(values, [f"{v:g}" for v in values])
    ax.xaxis.set_minor_formatter(NullFormatter())


def power_law(
    ax: Any,
    x: Any,
    y: Any,
    *,
    label: str,
    reference_slope: float | None = None,
    reference_label: str | None = None,
    color: str | None = None,
    fit: PowerLawFit | None = None,
    marker: str = "o",
) -> PowerLawFit:
    """Scatter y against x on log–log axes with the fitted power law and a reference slope.

    Several y per x (seeds) are drawn as faint points with their mean as a marker.  The dashed
    reference line has slope ``reference_slope`` and passes through the fit at the geometric mean
    of x.  Returns the fit.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    fit = fit or power_law_fit(x, y)
    color = color or PALETTE[len(ax.collections) % len(PALETTE)]
    ax.scatter(x, y, s=10, alpha=0.35, color=color, linewidths=0)
    xs = np.unique(x)
    means = np.array([np.exp(np.mean(np.log(y[x == v]))) for v in xs])
    ax.plot(xs, means, marker, color=color, label=f"{label} (slope {fit.slope:+.3f})", linestyle="none")
    grid = np.geomspace(xs.min(), xs.max(), 100)
    ax.plot(grid, fit.predict(grid), color=color, alpha=0.8)
    if reference_slope is not None:
        x_mid = np.exp(np.mean(np.log(xs)))
        y_mid = float(fit.predict(x_mid))
        ax.plot(grid, y_mid * (grid / x_mid) ** reference_slope, "--", color="0.35", linewidth=1.1,
                label=reference_label or f"slope {reference_slope:+g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    return fit


def measured_vs_bound(ax: Any, groups: dict[str, tuple[Any, Any]], *, xlabel: str = "bound",
                      ylabel: str = "measured") -> None:
    """Points (bound, measured) on log–log axes, one colour per group, with the line measured = bound.

    ``groups`` maps a label to ``(bound, measured)`` arrays.  Non-positive values cannot be drawn on
    log axes and are left out (a measured 0 satisfies any bound).
    """
    everything = []
    for (label, (bound, measured)), color in zip(groups.items(), PALETTE, strict=False):
        b = np.asarray(bound, dtype=np.float64).ravel()
        m = np.asarray(measured, dtype=np.float64).ravel()
        keep = (b > 0) & (m > 0)
        ax.scatter(b[keep], m[keep], s=14, alpha=0.7, label=label, color=color)
        everything += [b[keep], m[keep]]
    values = np.concatenate(everything)
    lo, hi = values.min() / 1.5, values.max() * 1.5
    ax.plot([lo, hi], [lo, hi], "k--", linewidth=1, label="measured = bound")
    ax.fill_between([lo, hi], [lo, hi], [lo, lo], color="0.85", alpha=0.5, zorder=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend()
