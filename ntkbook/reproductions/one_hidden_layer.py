"""``one-hidden-layer``: ‖H‖ and K(x, x) of the network of Eq. (8) across widths (Chapter 2).

Pieces are (width, seed) pairs; at ``paper`` scale the widths reach 10⁶.  The JSON holds every row
of :func:`ntkbook.experiments.one_hidden_layer.width_sweep` plus the fitted slopes per input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..experiments import one_hidden_layer as ohl
from ..reproduce import Reproduction, register, save_figure


def _assemble(settings, pieces, results) -> dict[str, Any]:
    rows = ohl.assemble_sweep(pieces, results)
    fits = ohl.sweep_fits(rows)
    return {
        "rows": {k: v.tolist() for k, v in rows.items()},
        "slopes": {str(x): {"hessian": f["hessian"].slope, "hessian_ci": [f["hessian"].ci_low, f["hessian"].ci_high],
                            "kernel": f["kernel"].slope, "kernel_slope_se": f["kernel_slope_se"]}
                   for x, f in fits.items()},
    }


def _plot(result: dict[str, Any], path: Path) -> None:
    from .. import plotting

    rows = {k: np.asarray(v) for k, v in result["rows"].items()}
    fig, (ax_h, ax_k) = plotting.subplots(2, width=5.0, height=4.0)
    for x, color in zip(np.unique(rows["x"]), plotting.PALETTE, strict=False):
        sel = rows["x"] == x
        plotting.power_law(ax_h, rows["width"][sel], rows["hessian"][sel], label=f"x = {x}", color=color,
                           reference_slope=-0.5)
        ax_k.scatter(rows["width"][sel], rows["kernel"][sel], s=10, alpha=0.6, color=color, label=f"x = {x}")
        ax_k.axhline(rows["kernel_limit"][sel][0], color=color, linewidth=1)
    ax_h.set_xlabel("width m")
    ax_h.set_ylabel("‖H‖")
    ax_h.legend()
    ax_k.set_xscale("log")
    ax_k.set_xlabel("width m")
    ax_k.set_ylabel("K(x, x)")
    ax_k.legend()
    fig.tight_layout()
    save_figure(fig, path, f"One-hidden-layer network, Eq. (8) — scale {result['scale']}")


register(Reproduction(
    name="one-hidden-layer",
    experiment="one_hidden_layer",
    description="‖H‖ = Θ(1/√m) and K(x,x) = Θ(1) for the network of Eq. (8) (Liu et al. 2020, Section 3.1)",
    pieces=ohl.sweep_pieces,
    compute=lambda piece, settings: ohl.sweep_piece(piece, settings),
    assemble=_assemble,
    plot=_plot,
))
