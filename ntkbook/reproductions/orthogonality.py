"""``orthogonality``: Figure 3 of Liu, Zhu & Belkin (2022, Appendix B) — mean |cos| between the gradients of
different neurons of one layer (Eq. 22) against the width (Chapter 7).

Pieces are (network kind, width, run): the equal-width 4-layer network ("fc", widths ``widths``) and the
bottleneck network ("bottleneck", m₁ = m₃ = ``bottleneck_outer``, m₂ = m_b in ``bottleneck_widths``), each
trained by full-batch gradient descent on 20 standardized 8×8 digit images of two classes (scikit-learn's
digits replace CIFAR-10, which cannot be downloaded here).  The JSON holds ``widths``, ``mean_abs_cos``
([[per run] per width], pairs pooled over the hidden layers, after training), ``bottleneck_widths``,
``bottleneck_mean_abs_cos`` ([[per run] per m_b], neurons of the bottleneck layer, the paper's metric),
``bottleneck_assembled_mean_abs_cos`` (neurons of layer 3, assembled from the bottleneck), the
per-layer values at initialization and after training, losses, step sizes, ``dataset`` and ``settings``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..experiments import orthogonality as orth
from ..reproduce import Reproduction, register, save_figure


def _pieces(settings) -> list[dict[str, Any]]:
    return orth.orthogonality_pieces(settings, ("fc", "bottleneck"))


def _assemble(settings, pieces, results) -> dict[str, Any]:
    return orth.assemble_orthogonality(settings, pieces, results)


def _plot(result: dict[str, Any], path: Path) -> None:
    from .. import plotting

    fig, (ax_l, ax_r) = plotting.subplots(2, width=5.0, height=4.0)
    widths = np.asarray(result["widths"], dtype=float)
    by_layer = np.asarray(result["mean_abs_cos_by_layer"], dtype=float)  # (widths, runs, layers)
    for layer, color in zip(range(1, by_layer.shape[2]), plotting.PALETTE[1:], strict=False):
        y = by_layer[:, :, layer]
        plotting.power_law(ax_l, np.repeat(widths, y.shape[1]), y.ravel(), label=f"layer {layer + 1}",
                           color=color, reference_slope=-0.5 if layer == 1 else None)
    ax_l.set_xlabel("width m")
    ax_l.set_ylabel("mean |cos θ_ij|")
    ax_l.set_title("4-layer network, equal widths")
    ax_l.legend()
    bw = np.asarray(result["bottleneck_widths"], dtype=float)
    bl = np.asarray(result["bottleneck_mean_abs_cos_by_layer"], dtype=float)
    for layer, color, label in ((2, plotting.PALETTE[2], "layer 3 (assembles the bottleneck)"),
                                (1, plotting.PALETTE[1], "layer 2 (the bottleneck)")):
        y = bl[:, :, layer]
        plotting.power_law(ax_r, np.repeat(bw, y.shape[1]), y.ravel(), label=label, color=color,
                           reference_slope=-0.5 if layer == 2 else None)
    ax_r.set_xlabel("bottleneck width m_b")
    ax_r.set_ylabel("mean |cos θ_ij|")
    ax_r.set_title(f"bottleneck network, m₁ = m₃ = {result['settings']['bottleneck_outer']}")
    ax_r.legend()
    fig.tight_layout()
    save_figure(fig, path, f"Orthogonality of neuron gradients (Eq. 22), {result['dataset']} — scale {result['scale']}")


register(Reproduction(
    name="orthogonality",
    experiment="orthogonality",
    description="mean |cos| of neuron gradients vs width, equal-width and bottleneck networks "
                "(Liu et al. 2022, App. B, Fig. 3)",
    pieces=_pieces,
    compute=lambda piece, settings: orth.orthogonality_piece(piece, settings),
    assemble=_assemble,
    plot=_plot,
))
