"""``bottleneck``: Figure 2 of Liu, Zhu & Belkin (2020) — ΔK of a wide network with a bottleneck (chapter 6).

The network of Eq. (48) (widths m, m_b, m; ReLU, identity bottleneck, ReLU; 3 linear outputs; with the NTK
factor 1/√m_b and biases, :func:`~ntkbook.reproductions.appendix_b.network`) trained on the data of Eq. (42)
by full-batch gradient descent on the cross-entropy of Eq. (49) until the loss is below ``loss_tol`` or
``max_steps`` steps (:mod:`ntkbook.reproductions.appendix_b`).  A piece is (m_b, block of ``runs_per_piece``
seeds); its rows, one per run, are described by :data:`~ntkbook.reproductions.appendix_b.COLUMNS`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import plotting
from ..reproduce import Reproduction, register
from ..scales import Bottleneck
from ..sweep import Sweep
from . import appendix_b as ab


def pieces(settings: Bottleneck) -> list[dict[str, Any]]:
    return [{"bottleneck_width": int(mb), "first_seed": s} for mb in settings.bottleneck_widths
            for s in ab.seed_blocks(settings.runs, settings.runs_per_piece)]


def piece(coords: dict[str, Any], settings: Bottleneck, key: Any = None):
    """The runs of one piece.  The key of the sweep engine is not used: the runs keep the keys of the
    archived pieces in ``results/paper``, fold_key(key(0), salt, seed) with the salt 1 000 003·m_b + m (an
    integer that tells the pieces apart, from the code that computed the archive)."""
    m, mb = settings.width, coords["bottleneck_width"]
    return ab.train_runs(ab.network((m, mb, m)), ab.block(coords["first_seed"], settings), 1_000_003 * mb + m,
                         ab.paper_data(settings.n, settings.data_seed), training="cross_entropy",
                         settings=settings).drop(columns="output")


SWEEP = Sweep(name="bottleneck", pieces=pieces, compute=piece,
              columns={k: v for k, v in ab.COLUMNS.items() if k != "output"}, version="2")


def figure(table, settings: Bottleneck):
    """Figure 2: mean ΔK against m_b (log–log), the runs as faint points, and the dashed Θ(1/√m_b)
    reference through the geometric mean of ΔK·√m_b."""
    fig, ax = plotting.subplots(1, width=5.6, height=3.9)
    color = plotting.PALETTE[0]
    ax.scatter(table.bottleneck_width, table.delta_k, s=9, alpha=0.35, color=color, linewidths=0)
    means = ab.mean_by(table, "bottleneck_width")
    mbs = means.index.to_numpy(float)
    ax.plot(mbs, means, "o-", color=color, label=f"ΔK, m = {settings.width} (mean over runs)")
    grid = np.geomspace(mbs.min(), mbs.max(), 50)
    ax.plot(grid, np.exp(np.mean(np.log(means * np.sqrt(mbs)))) / np.sqrt(grid), "--", color="0.35",
            label=r"$\Theta(1/\sqrt{m_b})$")
    ax.set(xscale="log", yscale="log", xlabel="bottleneck width m_b", ylabel="ΔK")
    plotting.label_ticks(ax, mbs)
    ax.legend()
    fig.tight_layout()
    return fig


register(Reproduction(
    name="bottleneck", experiment="bottleneck",
    description="ΔK of a wide network against its bottleneck width (Liu et al. 2020, Fig. 2)",
    sweep=SWEEP, figure=figure,
))
