"""``nonlinear-output``: Figure 1 of Liu, Zhu & Belkin (2020) — ΔK of f, softmax(f) and swish(f) (Chapter 6).

The network of Eq. (43) trained by full-batch gradient descent on the data of Eq. (42): the
cross-entropy of Eq. (46) (kernels of the logits f and of softmax(f) tracked on the same path) and
the square loss of Eq. (47) on swish(f), until the loss is below ``loss_tol`` (or the step cap, a guard:
``max_steps``, ``swish_max_steps``).  Pieces are (task, width, block of seeds); see
:mod:`ntkbook.experiments.linearity_experiments`.

JSON keys (besides the runner's): ``widths``; ``delta_k``, ``steps``, ``final_loss`` — each
{"linear", "softmax", "swish"}: [[per-run values] per width]; ``trajectory`` — {"width", "epochs"
({kind: steps}), "linear", "softmax", "swish"} with ΔK(t) as [[per-run values] per epoch]; ``swish_trapped`` —
[[per-run values] per width], the target entries of a swish run below the swish minimum at its stop (a run that
cannot meet the stopping rule); ``swish_stalled`` — [[per-run flags] per width], the swish runs stopped by the
stall rule (:func:`~ntkbook.experiments.linearity_experiments.stop_rule`); the step sizes of every run (at w₀
for the swish runs, whose step follows the measured curvature) are in ``settings.learning_rates``
({"cross_entropy", "swish"}: [[per run] per width]).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..experiments import linearity_experiments as le
from ..reproduce import Reproduction, register, save_figure


def _plot(result: dict[str, Any], path: Path) -> None:
    fig = le.plot_figure1(result)
    save_figure(fig, path, f"Figure 1 of Liu, Zhu & Belkin (2020) — scale {result['scale']}")


register(Reproduction(
    name="nonlinear-output",
    experiment="nonlinear_output",
    description="ΔK of linear, softmax and swish outputs against the width (Liu et al. 2020, Fig. 1)",
    pieces=le.nonlinear_output_pieces,
    compute=lambda piece, settings: le.nonlinear_output_piece(piece, settings),
    assemble=le.assemble_nonlinear_output,
    plot=_plot,
))
