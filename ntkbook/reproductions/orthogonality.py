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

from .. import plotting
from ..experiments import orthogonality as orth
from ..reproduce import Reproduction, register, save_figure
from ..scales import Orthogonality


def _pieces(settings: Orthogonality) -> list[dict[str, Any]]:
    return orth.orthogonality_pieces(settings, ("fc", "bottleneck"))


def _assemble(settings: Orthogonality, pieces, results) -> dict[str, Any]:
    return orth.assemble_orthogonality(settings, pieces, results)


def _plot(result: dict[str, Any], path: Path) -> None:
    fig, (ax_l, ax_r) = plotting.subplots(2, width=5.0, height=4.0)
    orth.figure_3_left_panel(ax_l, result, title="4-layer network, equal widths")
    outer = int(result["settings"]["bottleneck_outer"])
    orth.figure_3_right_panel(ax_r, result, bottleneck_outer=outer)
    ax_r.set_title(f"bottleneck network, m₁ = m₃ = {outer}")
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
