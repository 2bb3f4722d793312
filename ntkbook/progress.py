"""Progress bars for long loops (tqdm), silenced with ``NTKBOOK_PROGRESS=0``.

In JupyterLab the bars are widgets (ipywidgets); elsewhere they are text on stderr.  The book build
and the test suite set ``NTKBOOK_PROGRESS=0`` so that executed notebooks store no progress output.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def enabled() -> bool:
    return os.environ.get("NTKBOOK_PROGRESS", "1") not in ("0", "false", "no", "")


def progress(iterable: Iterable[T], *, desc: str, total: int | None = None) -> Iterator[T]:
    """Wrap ``iterable`` in a tqdm bar labelled ``desc`` (a no-op when progress is disabled)."""
    if not enabled():
        yield from iterable
        return
    from tqdm.auto import tqdm

    yield from tqdm(iterable, desc=desc, total=total, leave=False)
