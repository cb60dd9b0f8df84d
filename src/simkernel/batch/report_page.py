"""The HTML page of a ``--report``: :class:`Page` (figures, inline SVG charts, tables, the embedded JSON),
written whole or not at all. See :mod:`simkernel.batch.report` for what the reports hold.

The page needs nothing but itself: no script, no stylesheet or font from the network; each chart is an
SVG written by matplotlib (the plot extra, imported only when a chart is drawn) and placed inline, its
text kept as text (``svg.fonttype = "none"``) so that the browser draws it in the page's font stack,
which covers Latin, Cyrillic and CJK (``Noto Sans CJK SC``, then ``DejaVu Sans``, the system's
sans-serif). Each figure carries its exact value (``data-value``) and where it is in the embedded JSON
object (``data-key``, a dotted path) beside the rounded value it shows.
"""

from __future__ import annotations

import html
import io
import json
import logging
import math
import os
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simkernel._optional import import_optional
from simkernel.batch.summary import json_plain
from simkernel.errors import DataError

__all__ = ["COLORS", "FONT_STACK", "Figure", "Page", "require_plotting"]

FONT_STACK = ["Noto Sans CJK SC", "Noto Sans", "DejaVu Sans", "sans-serif"]
_CSS_FONTS = ", ".join(f"'{name}'" if " " in name else name for name in FONT_STACK)
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]

_STYLE = f"""
body {{ font-family: {_CSS_FONTS}; margin: 2em auto; max-width: 62em; color: #222; line-height: 1.4; }}
svg text {{ font-family: {_CSS_FONTS} !important; }}
h1 {{ font-size: 1.5em; }} h2 {{ font-size: 1.2em; margin-top: 1.6em; }}
table {{ border-collapse: collapse; margin: 0.5em 0; }}
td, th {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
figure {{ margin: 0.5em 0; }} figure svg {{ max-width: 100%; height: auto; }}
p.note {{ color: #555; font-size: 0.9em; }}
"""


def require_plotting() -> Any:
    """matplotlib, or :class:`~simkernel.errors.MissingDependencyError` naming ``pip install 'simkernel[plot]'``."""
    return import_optional("matplotlib", "plot", "--report (an HTML report with charts)")


@dataclass
class Figure:
    """One row of the figures table: its name, where it is in the page's JSON object (``key``, a dotted
    path), its value, its interval and where that is (``interval_key``: ``.low`` and ``.high`` under it)."""

    name: str
    key: str
    value: float | int | str | None
    interval: dict[str, Any] | None = None
    interval_key: str | None = None
    percent: bool = False


@dataclass
class Page:
    """An HTML report being built: sections of figures, charts and tables, then :meth:`write`."""

    title: str
    subtitle: str
    summary: dict[str, Any]
    sections: list[str] = field(default_factory=list)
    charts: int = 0

    def figures(self, heading: str, rows: Sequence[Figure], note: str = "") -> None:
        body = []
        for row in rows:
            shown = _shown(row.value, row.percent)
            cells = [
                f"<th>{_e(row.name)}</th>",
                f'<td class="num" data-key="{_e(row.key)}" data-value="{_e(_raw(row.value))}">{_e(shown)}</td>',
            ]
            if row.interval:
                low, high = row.interval["low"], row.interval["high"]
                where = row.interval_key or f"{row.key}_interval"
                cells.append(
                    f'<td class="num" data-key="{_e(where)}.low" data-value="{_e(_raw(low))}">{_e(_shown(low, row.percent))}</td>'
                    f'<td class="num" data-key="{_e(where)}.high" data-value="{_e(_raw(high))}">{_e(_shown(high, row.percent))}</td>'
                    f"<td>{_e(row.interval['method'])}</td>"
                )
            else:
                cells.append('<td colspan="3"></td>')
            body.append("<tr>" + "".join(cells) + "</tr>")
        head = "<tr><th>figure</th><th>value</th><th>95% low</th><th>95% high</th><th>interval</th></tr>"
        note_html = f'<p class="note">{_e(note)}</p>' if note else ""
        self.sections.append(
            f'<section id="figures"><h2>{_e(heading)}</h2><table class="figures">{head}{"".join(body)}</table>{note_html}</section>'
        )

    def chart(self, heading: str, draw: Callable[[Any], None], note: str = "", size=(7.5, 3.6)) -> None:
        """A chart: ``draw(figure)`` draws on a matplotlib Figure; its SVG goes inline."""
        self.charts += 1
        svg = _svg(draw, size, f"chart{self.charts}")
        note_html = f'<p class="note">{_e(note)}</p>' if note else ""
        self.sections.append(
            f'<section class="chart" id="chart{self.charts}"><h2>{_e(heading)}</h2><figure>{svg}</figure>{note_html}</section>'
        )

    def table(
        self, heading: str, header: Sequence[str], rows: Sequence[Sequence[Any]], note: str = ""
    ) -> None:
        head = "".join(f"<th>{_e(h)}</th>" for h in header)
        body = "".join(
            "<tr>"
            + "".join(
                f'<td class="num">{_e(_shown(v))}</td>'
                if isinstance(v, (int, float))
                else f"<td>{_e(v)}</td>"
                for v in row
            )
            + "</tr>"
            for row in rows
        )
        if not rows:
            body = f'<tr><td colspan="{len(header)}">none</td></tr>'
        note_html = f'<p class="note">{_e(note)}</p>' if note else ""
        self.sections.append(
            f'<section class="rows"><h2>{_e(heading)}</h2><table>{"<tr>" + head + "</tr>"}{body}</table>{note_html}</section>'
        )

    def html(self) -> str:
        data = json.dumps(json_plain(self.summary), ensure_ascii=False).replace("</", "<\\/")
        return (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{_e(self.title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
            f"<h1>{_e(self.title)}</h1>\n<p>{_e(self.subtitle)}</p>\n"
            + "\n".join(self.sections)
            + f'\n<script type="application/json" id="summary-json">{data}</script>\n</body>\n</html>\n'
        )

    def write(self, path: str) -> None:
        """Write the page to ``path`` (beside it first, then renamed: never half a file)."""
        text = self.html()
        temporary = f"{path}.simkernel-partial"
        try:
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temporary, path)
        except OSError as exc:
            raise DataError(f"cannot write --report {path!r}: {exc.strerror or exc}") from None


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _raw(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def _shown(value: Any, percent: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, bool) or isinstance(value, (int, np.integer)):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.1%}" if percent else f"{value:.4f}"
    return str(value)


def _svg(draw: Callable[[Any], None], size: tuple[float, float], salt: str) -> str:
    """The SVG of one chart, text as text, ready to be inlined (no XML declaration or DOCTYPE)."""
    matplotlib = require_plotting()
    from matplotlib.figure import Figure as MplFigure

    settings = {
        "svg.fonttype": "none",
        "svg.hashsalt": salt,
        "font.family": ["sans-serif"],
        "font.sans-serif": FONT_STACK[:-1],
        "font.size": 9.0,
    }
    font_log = logging.getLogger("matplotlib.font_manager")
    level = font_log.level
    font_log.setLevel(logging.ERROR)  # "font family not found" for the fonts the browser will pick
    try:
        with matplotlib.rc_context(settings), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            figure = MplFigure(figsize=size, layout="constrained")
            draw(figure)
            buffer = io.StringIO()
            figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    finally:
        font_log.setLevel(level)
    text = buffer.getvalue()
    text = re.sub(r"^<\?xml[^>]*>\s*", "", text)
    text = re.sub(r"<!DOCTYPE[^>]*>\s*", "", text)
    return text
