"""The first cell every chapter runs after its parameters: scale, ledger, style, machine."""

from __future__ import annotations

import platform

import jax

from . import claims, plotting, scales


def setup(notebook: str, scale: str | None = None) -> str:
    """Resolve and validate the scale, start the claims ledger, apply the plot style.

    Prints one line saying what runs where (scale, JAX version, backend and devices), so every
    executed notebook records its own conditions.  Returns the scale.
    """
    scale = scales.resolve(scale)
    claims.start(notebook, scale=scale)
    plotting.use_style()
    devices = ", ".join(sorted({d.device_kind for d in jax.devices()}))
    from . import __version__

    print(f"ntkbook {__version__} | scale = {scale} | JAX {jax.__version__} on {jax.default_backend()} "
          f"({len(jax.devices())} × {devices}) | Python {platform.python_version()}")
    return scale
