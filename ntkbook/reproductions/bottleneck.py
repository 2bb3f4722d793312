"""``bottleneck``: Figure 2 of Liu, Zhu & Belkin (2020) — ΔK of a wide network with a bottleneck (Chapter 6).

The network of Eq. (48) (widths m, m_b, m; ReLU, identity bottleneck, ReLU; linear output of size
3) trained by full-batch gradient descent on the cross-entropy of Eq. (49) with the data of
Eq. (42), until the loss is below ``loss_tol`` or ``max_steps`` steps.  Pieces are (bottleneck
width, block of seeds); see :mod:`ntkbook.experiments.linearity_experiments`.

JSON keys (besides the runner's): ``width`` (m), ``bottleneck_widths``; ``delta_k``, ``steps``,
``final_loss`` — [[per-run values] per bottleneck width]; the step sizes are in
``settings.learning_rates`` in the same layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..experiments import linearity_experiments as le
from ..reproduce import Reproduction, register, save_figure


def _plot(result: dict[str, Any], path: Path) -> None:
    fig = le.plot_figure2(result)
    save_figure(fig, path, f"Figure 2 of Liu, Zhu & Belkin (2020) — scale {result['scale']}")


register(Reproduction(
    name="bottleneck",
    experiment="bottleneck",
    description="ΔK of a wide network against its bottleneck width (Liu et al. 2020, Fig. 2)",
    pieces=le.bottleneck_pieces,
    compute=lambda piece, settings: le.bottleneck_piece(piece, settings),
    assemble=le.assemble_bottleneck,
    plot=_plot,
))
