"""``one-hidden-layer``: ‖H‖ and K(x, x) of the network of Eq. (8) across widths (Chapter 2).

Pieces are (width, seed) pairs; at ``paper`` scale the widths reach 10⁶.  The JSON holds every row
of :func:`ntkbook.experiments.one_hidden_layer.width_sweep` plus the fitted slopes per input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..experiments import one_hidden_layer as ohl
from ..reproduce import Reproduction, register, save_figure
from ..scales import OneHiddenLayer


def _assemble(settings: OneHiddenLayer, pieces, results) -> dict[str, Any]:
    rows = ohl.assemble_sweep(pieces, results)
    fits = ohl.sweep_fits(rows)
    return {
        "rows": {k: v.tolist() for k, v in rows.items()},
        "slopes": {str(x): {"hessian": f["hessian"].slope, "hessian_ci": [f["hessian"].ci_low, f["hessian"].ci_high],
                            "kernel": f["kernel"].slope, "kernel_slope_se": f["kernel_slope_se"]}
                   for x, f in fits.items()},
    }


def _plot(result: dict[str, Any], path: Path) -> None:
    fig = ohl.width_sweep_figure(result["rows"])
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
