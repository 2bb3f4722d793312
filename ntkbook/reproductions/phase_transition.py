"""``phase-transition``: Figure 2 of Oymak & Soltanolkotabi (2020) — the probability that gradient
descent fits n random labels, over a grid of widths k and input dimensions d (Chapter 9).

Pieces are (activation, n, d) columns: every k and every trial of a column are computed together
(:func:`ntkbook.experiments.phase_transition.fit_column`), so an interrupted run resumes at the
next unfinished column.  The JSON holds ``n_values``, ``activations``, ``ks``, ``ds`` and
``success`` = {activation: {n: [[probability per d] per k]}}, plus the median number of iterations
and the per-trial outcomes behind every cell.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

from .. import plotting
from ..experiments import phase_transition as pt
from ..reproduce import Reproduction, register, save_figure
from ..scales import PhaseTransition

SEED = 0


def _pieces(settings: PhaseTransition) -> list[dict[str, Any]]:
    return [{"activation": a, "n": int(n), "d": int(d)}
            for a in settings.activations for n in settings.n_values for d in settings.ds]


def _compute(piece, settings: PhaseTransition) -> dict[str, Any]:
    out = pt.fit_column(piece["activation"], piece["n"], piece["d"], settings.ks, trials=settings.trials,
                        lr=pt.PAPER_STEP_SIZES[piece["activation"]], max_iters=settings.max_iters,
                        tol=settings.tol, key=jax.random.key(SEED), chunk=settings.chunk,
                        d_max=max(settings.ds), workers=2)
    return {k: np.asarray(v).tolist() for k, v in out.items()}


def _assemble(settings: PhaseTransition, pieces, results) -> dict[str, Any]:
    ks, ds = list(settings.ks), list(settings.ds)
    success: dict[str, dict[str, list]] = {}
    iterations: dict[str, dict[str, list]] = {}
    trials: dict[str, dict[str, list]] = {}
    seconds: dict[str, dict[str, float]] = {}
    for a in settings.activations:
        for n in settings.n_values:
            cols = {p["d"]: r for p, r in zip(pieces, results) if p["activation"] == a and p["n"] == n}
            ok = np.stack([np.asarray(cols[d]["success"], bool) for d in ds], axis=1)  # (k, d, trial)
            its = np.stack([np.asarray(cols[d]["iterations"]) for d in ds], axis=1)
            success.setdefault(a, {})[str(n)] = ok.mean(axis=2).tolist()
            iterations.setdefault(a, {})[str(n)] = np.median(its, axis=2).tolist()
            trials.setdefault(a, {})[str(n)] = ok.astype(int).tolist()
            seconds.setdefault(a, {})[str(n)] = float(sum(cols[d].get("_seconds", 0.0) for d in ds))
    return {"n_values": list(settings.n_values), "activations": list(settings.activations), "ks": ks,
            "ds": ds, "success": success, "median_iterations": iterations, "trial_success": trials,
            "panel_seconds": seconds,
            "settings": {"step_sizes": {a: pt.PAPER_STEP_SIZES[a] for a in settings.activations},
                         "seed": SEED, "diverged_threshold": pt.DIVERGED,
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
    fig = plot_panels(result)
    save_figure(fig, path, f"Figure 2 of Oymak & Soltanolkotabi (2020) — scale {result['scale']}")


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
