"""Tables of measurements for the notebooks (pandas, formatted to significant digits)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd


def to_frame(rows: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """A DataFrame from a dict of equal-length columns or a list of row dicts (arrays → floats)."""
    if isinstance(rows, Mapping):
        data = {k: np.asarray(v).tolist() if hasattr(v, "shape") else v for k, v in rows.items()}
        return pd.DataFrame(data)
    return pd.DataFrame([{k: (np.asarray(v).item() if hasattr(v, "shape") and np.ndim(v) == 0 else v)
                          for k, v in row.items()} for row in rows])


def show(rows: Mapping[str, Any] | Sequence[Mapping[str, Any]] | pd.DataFrame, *, caption: str | None = None,
         digits: int = 4, hide_index: bool = True):
    """A styled table: floats to ``digits`` significant digits, optional caption."""
    frame = rows if isinstance(rows, pd.DataFrame) else to_frame(rows)
    floats = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c])]
    styler = frame.style.format({c: f"{{:.{digits}g}}" for c in floats})
    if hide_index:
        styler = styler.hide(axis="index")
    if caption:
        styler = styler.set_caption(caption)
    return styler


def markdown(header: Sequence[str], rows: Sequence[Sequence[Any]]):
    """A Markdown table (cells may contain ``$...$`` maths, but no ``|``), shown as rich output in notebooks."""
    from IPython.display import Markdown

    if any(len(r) != len(header) for r in rows):
        raise ValueError("every row must have one cell per header entry")

    def cell(v: Any) -> str:
        text = str(v).replace("\n", " ")
        if "|" in text:  # a pipe ends the cell even inside $...$: write \vert or \lvert ... \rvert
            raise ValueError(f"table cell contains '|', which would split it: {text!r}")
        return text

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return Markdown("\n".join(lines))
