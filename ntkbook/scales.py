"""The one table of sizes: every experiment at the three scales of the book.

* ``ci`` — seconds per notebook on a 2-core CPU (the test suite injects it);
* ``book`` — what the rendered book shows, minutes on a laptop CPU;
* ``paper`` — the papers' settings, meant for a GPU.

Notebooks choose the scale in their ``parameters`` cell (``NTKBOOK_SCALE`` or papermill
``-p scale ...``) and read their sizes with :func:`get`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from . import _validation as V

SCALES = ("ci", "book", "paper")
DEFAULT_SCALE = "book"

TABLE: dict[str, dict[str, dict[str, Any]]] = {
    # Chapter 1 — the tangent kernel and linearity -------------------------------------------
    "kernel_along_paths": {
        # a random-features model vs a tanh network, kernels along random and GD paths
        "ci": dict(width=64, num_inputs=8, path_steps=20, radius=10.0, input_dim=2),
        "book": dict(width=512, num_inputs=16, path_steps=100, radius=10.0, input_dim=2),
        "paper": dict(width=4096, num_inputs=32, path_steps=400, radius=10.0, input_dim=2),
    },
    "prop_2_3": {
        # points of B(w0, R) for two-hidden-layer tanh networks; ε = max ‖H‖ on each segment
        "ci": dict(widths=(32, 128), radii=(1.0, 4.0), samples=2, segment_points=3, input_dim=2, tol=1e-3),
        "book": dict(widths=(64, 256, 1024), radii=(0.5, 2.0, 8.0), samples=2, segment_points=5, input_dim=2,
                     tol=1e-3),
        "paper": dict(widths=(64, 256, 1024, 4096), radii=(0.5, 2.0, 8.0, 32.0), samples=10, segment_points=9,
                      input_dim=2, tol=1e-4),
    },
    # Chapter 2 — the (2,2,1)-norm and the one-hidden-layer network ----------------------------
    "norm_221_timing": {
        "ci": dict(d1=8, d2=8, d3_values=(2, 4, 6, 8, 10), repeats=2),
        "book": dict(d1=16, d2=16, d3_values=(2, 4, 6, 8, 10, 12, 14, 16), repeats=3),
        "paper": dict(d1=32, d2=32, d3_values=(2, 4, 6, 8, 10, 12, 14, 16), repeats=5),
    },
    "prop_2_1": {
        "ci": dict(num_tensors=20, shape=(5, 4, 6)),
        "book": dict(num_tensors=200, shape=(8, 6, 10)),
        "paper": dict(num_tensors=1000, shape=(12, 10, 14)),
    },
    "one_hidden_layer": {
        "ci": dict(widths=(10, 30, 100, 300, 1000), inputs=(0.5, 1.0, 2.0), seeds=2, tol=1e-4),
        "book": dict(widths=(10, 30, 100, 300, 1000, 3000, 10_000, 30_000, 100_000), inputs=(0.5, 1.0, 2.0),
                     seeds=5, tol=1e-4),
        "paper": dict(widths=(10, 100, 1000, 10_000, 100_000, 1_000_000), inputs=(0.5, 1.0, 2.0), seeds=10,
                      tol=1e-5),
    },
    # Chapter 3 — transition to linearity with a linear output layer (2020, Section 3) ----------
    # Chapters 4–5 — what breaks linearity; lazy training (2020, Sections 1.1, 4, 5, App. A) --
    # Chapter 6 — reproduction of the 2020 experiments (Section 6, Appendix B) -----------------
    # Chapter 7 — assembling weak models (2022) ---------------------------------------------
    # Chapters 8–9 — Khatri–Rao products and moderate overparameterization (Oymak & Soltanolkotabi)
}
"""experiment → scale → settings.  Every size the book uses, at the three scales, in one place."""


class Settings(Mapping):
    """Read-only sizes of one experiment at one scale; keys are also attributes."""

    def __init__(self, experiment: str, scale: str, values: dict[str, Any]):
        self._experiment, self._scale, self._values = experiment, scale, dict(values)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_"):
            raise AttributeError(key)
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(f"experiment {self._experiment!r} has no setting {key!r}; "
                                 f"it has {', '.join(self._values)}") from None

    @property
    def scale(self) -> str:
        return self._scale

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"Settings({self._experiment!r}, {self._scale!r}: {body})"


def resolve(scale: str | None = None) -> str:
    """The scale to use: ``scale`` if given, else ``$NTKBOOK_SCALE``, else ``"book"``.

    Raises:
        ValueError: for an unknown scale, listing the valid ones.
    """
    if scale is None:
        scale = os.environ.get("NTKBOOK_SCALE", DEFAULT_SCALE)
    return V.choice("scale", scale, SCALES)


def get(experiment: str, scale: str | None = None) -> Settings:
    """Sizes of ``experiment`` at ``scale`` (see :func:`resolve`)."""
    V.choice("experiment", experiment, TABLE)
    scale = resolve(scale)
    return Settings(experiment, scale, TABLE[experiment][scale])
