"""``nonlinear-output``: Figure 1 of Liu, Zhu & Belkin (2020) — ΔK of f, softmax(f) and swish(f) (chapter 6).

The network of Eq. (43) trained on the data of Eq. (42) by full-batch gradient descent until the paper's rule
(loss < ``loss_tol``), or a step cap (a guard: ``max_steps``, ``swish_max_steps``): the cross-entropy of
Eq. (46) on the logits f, whose kernel and that of softmax(f) are measured on the same path, and the square
loss of Eq. (47) on swish(f) (:mod:`ntkbook.reproductions.appendix_b`).  A piece is (width, task, block of
``runs_per_piece`` seeds); its rows, one per run and kernel, are described by
:data:`~ntkbook.reproductions.appendix_b.COLUMNS`.  The two tasks of a (width, seed) start from the same
network: the key of a run is ``fold_key(key(0), m, seed)``, that of the archived pieces in ``results/paper``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import plotting
from ..reproduce import Reproduction, register
from ..scales import NonlinearOutput
from ..sweep import Sweep
from . import appendix_b as ab

LABELS = {"linear": "linear output f", "softmax": "softmax output f̃₁", "swish": "swish output f̃₂"}


def pieces(settings: NonlinearOutput) -> list[dict[str, Any]]:
    return [{"width": int(m), "training": t, "first_seed": s} for m in settings.widths for t in ab.KERNELS
            for s in ab.seed_blocks(settings.runs, settings.runs_per_piece)]


def piece(coords: dict[str, Any], settings: NonlinearOutput, key: Any = None):
    """The runs of one piece (the key of the sweep engine is not used: see the module docstring)."""
    m = coords["width"]
    return ab.train_runs(ab.network((m,)), ab.block(coords["first_seed"], settings), m,
                         ab.paper_data(settings.n, settings.data_seed), training=coords["training"],
                         settings=settings)


SWEEP = Sweep(name="nonlinear_output", pieces=pieces, compute=piece, columns=ab.COLUMNS, version="2")


def figure(table, settings: NonlinearOutput):
    """Figure 1: left, ΔK against m (mean over runs, runs as faint points, a dashed slope −1/2 through the
    linear-output means); right, ΔK(t) at ``trajectory_width`` (mean over runs) until the last run stops."""
    fig, (left, right) = plotting.subplots(2, width=5.2, height=3.9)
    for (kind, label), color in zip(LABELS.items(), plotting.PALETTE, strict=False):
        rows = table[table.output == kind]
        left.scatter(rows.width, rows.delta_k, s=9, alpha=0.35, color=color, linewidths=0)
        means = ab.mean_by(rows, "width")
        left.plot(means.index, means, "o-", color=color, label=label)
        traj = rows[rows.width == settings.trajectory_width]
        rec = np.asarray(traj.record_steps.iloc[0])
        keep = (rec <= traj.steps.max()) & (rec > 0)
        right.plot(rec[keep], np.stack(traj.curve.to_numpy()).mean(axis=0)[keep], color=color, label=label)
    lin = ab.mean_by(table[table.output == "linear"], "width")
    m = lin.index.to_numpy(float)
    mid = np.exp(np.mean(np.log(m)))
    left.plot(m, np.exp(np.mean(np.log(lin))) * (m / mid) ** -0.5, "--", color="0.35", linewidth=1.1,
              label=r"$\propto m^{-1/2}$")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend()
    plotting.label_ticks(left, m)
    left.set(xlabel="width m", ylabel="ΔK (mean over runs)")
    right.set(xlabel="epoch t (full-batch GD steps)", ylabel=r"$\|K(w_t)-K(w_0)\|_F/\|K(w_0)\|_F$",
              title=f"m = {settings.trajectory_width}")
    fig.tight_layout()
    return fig


register(Reproduction(
    name="nonlinear-output", experiment="nonlinear_output",
    description="ΔK of linear, softmax and swish outputs against the width (Liu et al. 2020, Fig. 1)",
    sweep=SWEEP, figure=figure,
))
