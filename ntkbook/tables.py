"""The one table function of the book: :func:`show`.

``nb.tables.show(data, caption=..., units=...)`` takes a pandas DataFrame, a dict of equal-length
columns or a list of row dicts and returns a :class:`Table`, which a notebook displays as an HTML
table (CSS classes ``ntkbook-table`` in ``book/_static/ntkbook.css``: padded cells, numbers
right-aligned, a horizontal scroll box when the table is wider than the text column) and a terminal
as aligned plain text (its ``repr``).

Numbers are formatted to their significance (:func:`format_number`): integers in full with
thousands separators, floats to ``digits`` significant digits (4 by default), scientific notation
below 10⁻³ and from 10⁶ on.  Units go in the headers: name the column ``"time (s)"`` or pass
``units={"time": "s"}``.

:func:`fit_cells` gives the cells "fitted exponent, 95% CI" of a log–log fit, :func:`order_fit` the same
next to an order claim's window; :func:`quantities` shows a dict of named scalars as two columns
(quantity, value).
:func:`markdown` stays for the few tables whose cells hold maths (``$...$``), which only a Markdown
output typesets.  :func:`summarize` condenses a sweep to one row per coordinate value (mean, geometric mean,
median, min or max over seeds, optionally with the range).
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from . import _validation as V
from .fitting import ORDER_WINDOWS, power_law_fit

#: Non-zero floats below this magnitude are written in scientific notation.
SCI_LOW = 1e-3
#: Floats from this magnitude on are written in scientific notation.
SCI_HIGH = 1e6


def to_frame(rows: Mapping[str, Any] | Sequence[Mapping[str, Any]] | pd.DataFrame) -> pd.DataFrame:
    """A DataFrame from a dict of equal-length columns or a list of row dicts (arrays → Python lists)."""
    if isinstance(rows, pd.DataFrame):
        return rows
    if isinstance(rows, Mapping):
        data = {str(k): np.asarray(v).tolist() if hasattr(v, "shape") else v for k, v in rows.items()}
        lengths = {len(v) if isinstance(v, (list, tuple)) else 1 for v in data.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns must have equal lengths, got lengths {sorted(lengths)}")
        # a column mixing ints and floats (a count next to ratios) keeps its ints: object dtype
        return pd.DataFrame({k: pd.Series(list(v), dtype=object) if _mixes_ints_and_floats(v) else v
                             for k, v in data.items()})
    if isinstance(rows, Sequence) and not isinstance(rows, (str, bytes)):
        if not all(isinstance(r, Mapping) for r in rows):
            raise TypeError("rows must be a DataFrame, a dict of columns or a list of row dicts")
        return pd.DataFrame([{str(k): (np.asarray(v).item() if hasattr(v, "shape") and np.ndim(v) == 0 else v)
                              for k, v in row.items()} for row in rows])
    raise TypeError(f"rows must be a DataFrame, a dict of columns or a list of row dicts, got {type(rows).__name__}")


def _mixes_ints_and_floats(column: Any) -> bool:
    if not isinstance(column, (list, tuple)):
        return False
    ints = any(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in column)
    return ints and any(isinstance(v, (float, np.floating)) for v in column)


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def format_number(value: Any, digits: int = 4, *, html_output: bool = False) -> str:
    """One number as a table shows it.

    * integers: in full with thousands separators — ``4,096`` (a table also writes the floats of a
      column this way when every number of the column is integral, e.g. widths stored as floats);
    * floats with SCI_LOW ≤ |x| < SCI_HIGH: ``digits`` significant digits in fixed notation
      (``0.3086``, ``12.35``, ``1,235``);
    * other floats: scientific, ``digits`` significant digits — ``1.235e-05`` (in HTML ``1.235×10⁻⁵``);
    * nan → ``–``, ±inf → ``∞``/``−∞``; booleans → ``yes``/``no``.
    """
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if not _is_number(value):
        raise TypeError(f"not a number: {value!r}")
    x = float(value)
    if math.isnan(x):
        return "–"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    a = abs(x)
    if a == 0:
        return "0"
    if SCI_LOW <= a < SCI_HIGH:
        decimals = max(digits - 1 - math.floor(math.log10(a)), 0)
        text = f"{x:,.{decimals}f}"
        # rounding can carry into a new digit (9.9996 → 10.000): drop the extra decimal
        if decimals > 0 and len(text.replace(",", "").lstrip("-").replace(".", "").lstrip("0")) > digits:
            text = f"{x:,.{decimals - 1}f}"
        return text
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    if html_output:
        return f"{mantissa}×10<sup>{int(exponent)}</sup>".replace("<sup>-", "<sup>−")
    return f"{mantissa}e{exponent}"


def _scalar(value: Any) -> Any:
    return np.asarray(value).item() if hasattr(value, "shape") and np.ndim(value) == 0 else value


def _integral(value: Any) -> bool:
    """An int, or a finite float with an integer value below 10¹⁵."""
    if isinstance(value, numbers.Integral):
        return True
    x = float(value)
    return math.isfinite(x) and x == int(x) and abs(x) < 1e15


def _cell(value: Any, digits: int, html_output: bool, as_int: bool = False) -> tuple[str, bool]:
    """(text, is_number) of one cell; ``as_int`` writes integral floats as integers."""
    value = _scalar(value)
    if value is None:
        return "", False
    if _is_number(value) or isinstance(value, (bool, np.bool_)):
        if as_int and _is_number(value) and _integral(value):
            value = int(value)
        text = format_number(value, digits, html_output=html_output)
        return text, not isinstance(value, (bool, np.bool_))
    if isinstance(value, (list, tuple, np.ndarray)):
        items = [_cell(v, digits, html_output)[0] for v in np.asarray(value, dtype=object).ravel().tolist()]
        return "[" + ", ".join(items) + "]", False
    text = str(value)
    return (html.escape(text) if html_output else text), False


def _header(name: Any, units: Mapping[str, str]) -> str:
    name = " / ".join(map(str, name)) if isinstance(name, tuple) else str(name)
    unit = units.get(name)
    return f"{name} ({unit})" if unit else name


@dataclass(frozen=True)
class Table:
    """A formatted table: ``repr`` is aligned plain text, ``_repr_html_`` an HTML table.

    Attributes:
        frame: the data (a pandas DataFrame, unformatted).
        caption: shown above the table, or None.
        units: column name → unit, appended to the header as ``name (unit)``.
        digits: significant digits of floats, one number or column name → number.
    """

    frame: pd.DataFrame
    caption: str | None = None
    units: Mapping[str, str] | None = None
    digits: int | Mapping[str, int] = 4

    def _digits(self, column: str) -> int:
        if isinstance(self.digits, Mapping):
            return int(self.digits.get(column, 4))
        return int(self.digits)

    def _columns(self, html_output: bool) -> list[tuple[str, list[str], bool]]:
        """(header, cell texts, numeric) per column; a column is numeric when all its cells are."""
        units = dict(self.units or {})
        out = []
        for name in self.frame.columns:
            key = " / ".join(map(str, name)) if isinstance(name, tuple) else str(name)
            values = [_scalar(v) for v in self.frame[name].tolist()]
            nums = [v for v in values if _is_number(v)]
            as_int = bool(nums) and all(_integral(v) for v in nums)
            cells = [_cell(v, self._digits(key), html_output, as_int) for v in values]
            numeric = all(is_num or text in ("", "–") for text, is_num in cells) and any(n for _, n in cells)
            head = _header(name, units)
            out.append((html.escape(head) if html_output else head, [t for t, _ in cells], numeric))
        return out

    def to_text(self) -> str:
        """Aligned plain text: numbers right-aligned, text left-aligned, two spaces between columns."""
        cols = self._columns(html_output=False)
        widths = [max([len(h), *(len(c) for c in cells)]) for h, cells, _ in cols]

        def align(text: str, width: int, numeric: bool) -> str:
            return text.rjust(width) if numeric else text.ljust(width)

        lines = [self.caption] if self.caption else []
        lines.append("  ".join(align(h, w, n) for (h, _, n), w in zip(cols, widths, strict=True)).rstrip())
        lines.append("  ".join("-" * w for w in widths))
        for i in range(len(self.frame)):
            lines.append("  ".join(align(cells[i], w, n) for (_, cells, n), w in zip(cols, widths, strict=True))
                         .rstrip())
        return "\n".join(lines)

    def to_html(self) -> str:
        cols = self._columns(html_output=True)
        parts = ['<div class="ntkbook-table-wrap"><table class="ntkbook-table">']
        if self.caption:
            parts.append(f"<caption>{html.escape(self.caption)}</caption>")
        parts.append("<thead><tr>")
        parts += [f'<th class="{"num" if n else "text"}">{h}</th>' for h, _, n in cols]
        parts.append("</tr></thead><tbody>")
        for i in range(len(self.frame)):
            parts.append("<tr>" + "".join(f'<td class="{"num" if n else "text"}">{cells[i]}</td>'
                                          for _, cells, n in cols) + "</tr>")
        parts.append("</tbody></table></div>")
        return "".join(parts)

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        return self.to_html()


def show(data: Mapping[str, Any] | Sequence[Mapping[str, Any]] | pd.DataFrame, *, caption: str | None = None,
         units: Mapping[str, str] | None = None, digits: int | Mapping[str, int] = 4,
         index: bool | None = None) -> Table:
    """The book's table: ``data`` formatted for a notebook (HTML) and a terminal (plain text).

    Args:
        data: a DataFrame, a dict of equal-length columns, or a list of row dicts.
        caption: a sentence shown above the table.
        units: column name → unit (``{"time": "s"}`` → header ``time (s)``).
        digits: significant digits of floats (4), or column name → digits.
        index: show the DataFrame's index as the first column; by default only when it is not the
            plain 0, 1, 2, ... range.

    Returns:
        a :class:`Table` (display it as a cell's last expression).
    """
    frame = to_frame(data)
    if isinstance(digits, numbers.Integral) and not isinstance(digits, bool):
        if digits < 1:
            raise ValueError(f"digits must be >= 1, got {digits}")
    elif not isinstance(digits, Mapping):
        raise TypeError(f"digits must be an int or a mapping column → int, got {digits!r}")
    if units is not None and not isinstance(units, Mapping):
        raise TypeError(f"units must be a mapping column → unit, got {units!r}")
    unknown = set(units or {}) - {str(c) for c in frame.columns}
    if unknown:
        raise ValueError(f"units names columns that the table does not have: {sorted(unknown)}")
    plain_index = isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 and frame.index.step == 1
    if index if index is not None else not plain_index:
        frame = frame.reset_index()
    return Table(frame, caption, dict(units) if units else None, digits)


def quantities(values: Mapping[str, Any], *, caption: str | None = None,
               digits: int | Mapping[str, int] = 4) -> Table:
    """A two-column table (``quantity``, ``value``) of named scalars, one row per entry of ``values`` in
    its order — for a measurement that returns a dict of numbers, e.g. ``{"max_error": 1e-15, ...}``.

    Raises:
        TypeError: if ``values`` is not a mapping.
        ValueError: if it is empty.
    """
    if not isinstance(values, Mapping):
        raise TypeError(f"values must be a mapping name → number, got {type(values).__name__}")
    if not values:
        raise ValueError("values must hold at least one quantity")
    return show({"quantity": list(values), "value": list(values.values())}, caption=caption, digits=digits)


def geometric_means(sweep: Mapping[str, Any], by: str, fields: tuple[str, ...], *,
                    where: Any = None) -> dict[str, np.ndarray]:
    """Per value of ``by`` (e.g. width): the geometric mean over seeds of each (positive) field.

    ``where`` optionally selects the rows (a boolean array).  Returns ``{by: values, field: means}``.
    """
    keys = np.asarray(sweep[by])
    sel = np.ones(keys.shape, bool) if where is None else np.asarray(where, bool)
    values = np.unique(keys[sel])
    out: dict[str, np.ndarray] = {by: values}
    for f in fields:
        col = np.asarray(sweep[f], dtype=np.float64)
        out[f] = np.array([np.exp(np.mean(np.log(col[sel & (keys == v)]))) for v in values])
    return out


STATS = {"mean": "Means", "gmean": "Geometric means", "median": "Medians", "min": "Smallest values",
         "max": "Largest values"}
"""The statistics :func:`summarize` can show, with the words its caption uses."""


def _statistic(values: np.ndarray, stat: str, column: str) -> float:
    if stat == "gmean":
        if np.any(values <= 0):
            raise ValueError(f"column {column!r} has values <= 0: a geometric mean needs positive values "
                             "(use stat='mean' or 'median')")
        return float(np.exp(np.mean(np.log(values))))
    return float({"mean": np.mean, "median": np.median, "min": np.min, "max": np.max}[stat](values))


def summarize(rows: Mapping[str, Any] | pd.DataFrame, by: str | Sequence[str],
              columns: Sequence[str] | Mapping[str, str] | None = None, *, stat: str = "mean",
              spread: bool = False, caption: str | None = None, transpose: bool = False,
              digits: int = 4) -> Table:
    """A sweep's table condensed to one row per value of the coordinates ``by``: ``stat`` of each column over
    the other rows of that value (the seeds), and with ``spread`` its smallest and largest value.

    ``summarize(rows, "width", {"dist2": "‖w* − w₀‖", "eq2": "Eq. 2 bound"}, stat="gmean")``

    Args:
        rows: the tidy table of :func:`ntkbook.sweep.run` (or a dict of equal-length columns).
        by: the coordinate(s) that label the rows.
        columns: the columns to show, in order; a mapping gives each its header (words or maths with units;
            it may rename the ``by`` columns too).  Default: every numeric column but ``by`` and ``seed``.
        stat: one of :data:`STATS` (``"gmean"``: geometric mean, for positive quantities on log scales).
        spread: write each cell as ``stat (min–max)``.
        caption: a sentence after the automatic one ("Means over 5 seeds.").
        transpose: one row per column and one column per value of ``by`` (for many columns and few values).
        digits: significant digits.

    Raises:
        TypeError: if ``rows`` is not a table.
        ValueError: for an unknown column or statistic, or a geometric mean of values that are not positive.
    """
    frame = to_frame(rows)
    by = [by] if isinstance(by, str) else list(by)
    V.choice("stat", stat, STATS)
    headers = dict(columns) if isinstance(columns, Mapping) else {}
    if columns is None:
        names = [c for c in frame.columns if c not in by and c != "seed"
                 and pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])]
    else:
        names = [c for c in columns if c not in by]
    unknown = [c for c in [*by, *names] if c not in frame.columns]
    if unknown:
        raise ValueError(f"rows have no column {', '.join(map(repr, unknown))}; columns: {list(frame.columns)}")
    groups = list(frame.groupby(by, sort=False))
    sizes = sorted({len(g) for _, g in groups})
    out: dict[str, list[Any]] = {headers.get(b, b): [] for b in by}
    for name in names:
        out[headers.get(name, name)] = []
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        for b, v in zip(by, key, strict=True):
            out[headers.get(b, b)].append(v)
        for name in names:
            values = np.asarray(group[name], dtype=np.float64)
            value = _statistic(values, stat, name)
            if spread:
                value = " ".join([format_number(value, digits), f"({format_number(float(values.min()), digits)}–"
                                  f"{format_number(float(values.max()), digits)})"])
            out[headers.get(name, name)].append(value)
    count = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]}"
    words = f"{STATS[stat]} over {count} run{'s' if sizes[-1] > 1 else ''} per row"
    if spread:
        words += ", smallest–largest in brackets"
    text = f"{words}. {caption}" if caption else f"{words}."
    if transpose:
        labels = [", ".join(f"{headers.get(b, b)} = {format_number(v) if _is_number(v) else v}"
                            for b, v in zip(by, vals, strict=True))
                  for vals in zip(*(out[headers.get(b, b)] for b in by), strict=True)]
        body = {"quantity": [headers.get(n, n) for n in names]}
        for i, label in enumerate(labels):
            body[label] = [out[headers.get(n, n)][i] for n in names]
        return show(body, caption=text, digits=digits)
    return show(out, caption=text, digits=digits)


def fit_cells(x: Any, y: Any) -> dict[str, Any]:
    """The log–log fit (:func:`ntkbook.fitting.power_law_fit`) of ``y`` against ``x`` as two cells of a table
    row: ``fitted exponent`` (float) and ``95% CI`` (text ``[low, high]``, 3 decimals).

    ``x`` and ``y``: positive numbers of the same size (n,), several y per x allowed (seeds).  Only shows
    the fit; a claim (:mod:`ntkbook.claims`) decides.  Raises what :func:`~ntkbook.fitting.power_law_fit`
    raises on bad input (``TypeError``/``ValueError``).
    """
    fit = power_law_fit(x, y)
    return {"fitted exponent": fit.slope, "95% CI": f"[{fit.ci_low:.3f}, {fit.ci_high:.3f}]"}


def order_fit(x: Any, y: Any, expect: str) -> dict[str, Any]:
    """:func:`fit_cells` next to the window of an order claim (:data:`ntkbook.fitting.ORDER_WINDOWS`,
    ``expect`` = ``"constant"`` or ``"decay"``), as the cells of a table row: ``predicted exponent``,
    ``window`` (text ``[low, high)``: windows are half-open, :class:`ntkbook.fitting.RateWindow`),
    ``fitted exponent`` and ``95% CI``.  Only shows the fit; :func:`ntkbook.claims.order` decides the claim.

    Raises:
        TypeError: if ``expect`` is not a string (or ``x``, ``y`` are not arrays of numbers).
        ValueError: if ``expect`` is not a key of ``ORDER_WINDOWS`` (or ``x``, ``y`` are unusable).
    """
    win = ORDER_WINDOWS[V.choice("expect", expect, ORDER_WINDOWS)]
    return {"predicted exponent": win.predicted, "window": f"[{win.low:g}, {win.high:g})", **fit_cells(x, y)}


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


def settings(columns: Mapping[str, Any], *, caption: str | None = None) -> Table:
    """The fields of several settings objects side by side: one row per field (in first-seen order), one
    column per entry of ``columns`` (name → an :class:`ntkbook.scales.ExperimentSettings`, or anything with
    ``as_dict()``); "—" where a settings object has no such field.  Tuples are shown as text."""
    if not isinstance(columns, Mapping) or not columns:
        raise TypeError("columns must be a non-empty mapping name → settings object")
    fields: dict[str, dict[str, Any]] = {}
    for name, value in columns.items():
        if not hasattr(value, "as_dict"):
            raise TypeError(f"columns[{name!r}] must have as_dict() (a settings dataclass), got {type(value).__name__}")
        fields[name] = value.as_dict()
    keys = list(dict.fromkeys(k for d in fields.values() for k in d))

    def text(v: Any) -> Any:
        return ", ".join(map(str, v)) if isinstance(v, tuple) else v

    table: dict[str, list[Any]] = {"setting": keys}
    for name, d in fields.items():
        table[name] = [str(text(d[k])) if k in d else "—" for k in keys]
    return show(table, caption=caption)
