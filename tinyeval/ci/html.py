"""The run as one self-contained HTML page: gate table, chart, judges, failures with details.

:func:`html_report` is re-exported by :mod:`tinyeval.report`. The page needs no
script, font or file beside it; every value taken from a row is escaped.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

from .. import _extra
from ..errors import plural, shorten
from ..gating import CategoryVerdict, GateReport
from ..records import verdicts
from ..report import (
    _gate_line,
    _mark,
    _pct,
    _rate_cell,
    _unchecked_lines,
    describe_failure,
    gate_word,
    missing,
    text_of,
    usage_line,
)
from ..stats import format_rate

# --------------------------------------------------------------------------- HTML

# Chart geometry in SVG user units; the SVG scales to the page width.
_LABEL_W = 240  # category names, right-aligned before the bars
_BAR_W = 400  # the 0%..100% scale
_TEXT_W = 400  # the mark, the rate and the unchecked count, after the bars
_ROW_H = 32
_BAR_H = 16
_AXIS_H = 30
_GLOBAL_GAP = 10  # space and a rule between the categories and the global line
_NAME_CHARS = 26  # longer category names are clipped in the chart (never in the tables)
_OUTPUT_CHARS = 300  # an output in the failures table (in full in the case's details)
_DETAIL_CHARS = 4000  # an input, context, output or judge reply in a case's details
_EXCERPT_CHARS = 120  # an unparsed reply quoted in the "why" column

_HTML_STYLE = """
body{margin:0;color:#1a202c;background:#fff;
 font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
main{max-width:1180px;margin:0 auto;padding:20px 24px 40px}
h1{font-size:1.6em;margin:0 0 12px}
h2{font-size:1.2em;margin:28px 0 8px;border-bottom:1px solid #e2e8f0;padding-bottom:4px}
.verdict{padding:10px 16px;border-left:10px solid;border-radius:4px;margin-bottom:12px}
.verdict p,.verdict ul{margin:2px 0}
.verdict .outcome{font-size:1.5em;font-weight:700}
.verdict.failed{background:#fff5f5;border-color:#c53030}
.verdict.failed .outcome{color:#9b2c2c}
.verdict.passed{background:#f0fff4;border-color:#2f855a}
.verdict.passed .outcome{color:#22543d}
.verdict.ungated{background:#f7fafc;border-color:#718096}
.verdict.incomplete{background:#fffaf0;border-color:#c05621}
.verdict.incomplete .outcome{color:#9c4221}
.verdict .missing{font-weight:600;color:#9c4221}
.verdict .undecided{color:#744210}
.verdict .unchecked{color:#553c9a}
dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 16px;margin:8px 0}
dl.facts dt{font-weight:600;color:#4a5568}
dl.facts dd{margin:0;overflow-wrap:anywhere}
dl.facts dl.facts{margin:0}
table{border-collapse:collapse;margin:8px 0 12px;max-width:100%}
caption{text-align:left;color:#4a5568;padding:4px 0;caption-side:top}
th,td{text-align:left;vertical-align:top;padding:4px 10px;border-bottom:1px solid #e2e8f0;
 overflow-wrap:break-word}
td.model,td.why,td.output,tr.case th,table.judges th[scope=row]{overflow-wrap:anywhere}
td.model{min-width:14ch}
td.status{white-space:nowrap}
thead th{border-bottom:2px solid #a0aec0}
.rate,.num{font-variant-numeric:tabular-nums;white-space:nowrap}
.num{text-align:right}
.blocks{color:#9b2c2c;font-weight:700}
.inconclusive-word{color:#975a16;font-weight:700}
tr.blocking th[scope=row]{border-left:4px solid #c53030}
tr.inconclusive th[scope=row]{border-left:4px solid #d69e2e}
tr.global th,tr.global td{color:#4a5568;font-style:italic}
tbody tr.group th{background:#edf2f7;font-weight:600}
table.failures{width:100%}
table.failures tr.case th{min-width:9ch}
table.judges th[scope=row]{min-width:12ch}
table.failures tr.case.has-more td,table.failures tr.case.has-more th{border-bottom:0}
td.output{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.85em;
 white-space:pre-wrap;min-width:24ch;max-width:48ch}
td.output.empty{font-family:inherit;font-style:italic;color:#718096}
td.why{min-width:24ch}
ul.why{margin:0;padding-left:1.1em}
tr.error td.status{color:#9b2c2c;font-weight:600}
tr.unchecked td.status{color:#553c9a;font-weight:600}
tr.more td{padding-top:0}
details.case summary{color:#2c5282;cursor:pointer}
details.case dl.facts{margin:4px 0 8px 1.1em}
details.case dd p{margin:0 0 2px}
pre{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.85em;
 white-space:pre-wrap;overflow-wrap:anywhere;margin:0;max-height:24em;overflow-y:auto;
 background:#f7fafc;border:1px solid #e2e8f0;border-radius:3px;padding:4px 6px}
code{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.9em}
.note{color:#4a5568}
dl.criteria dd{font-style:italic}
svg.chart{width:100%;max-width:1040px;height:auto;display:block}
svg.chart text{font-size:13px;fill:#1a202c}
svg.chart .axis text{fill:#4a5568;font-size:12px}
svg.chart .grid{stroke:#e2e8f0;stroke-width:1}
svg.chart .track{fill:#f7fafc;stroke:#cbd5e0;stroke-width:1}
svg.chart .ok .bar{fill:#48a06a}
svg.chart .blocking .bar{fill:#d9534f}
svg.chart .inconclusive .bar{fill:#d69e2e}
svg.chart .ungated .bar{fill:#6b8fc7}
svg.chart .global .bar{fill:#cbd5e0}
svg.chart .unchecked{fill:#805ad5}
svg.chart .interval,svg.chart .cap{stroke:#1a202c;stroke-width:1.5}
svg.chart .threshold{stroke:#1a202c;stroke-width:3}
svg.chart .rule{stroke:#a0aec0;stroke-dasharray:4 3}
svg.chart .blocking .word{fill:#9b2c2c;font-weight:700}
svg.chart .inconclusive .word{fill:#975a16;font-weight:700}
svg.chart .ok .word{fill:#22543d;font-weight:600}
svg.chart .ungated .word,svg.chart .global text{fill:#4a5568}
svg.chart .global text{font-style:italic}
svg.chart .count{fill:#553c9a}
.swatch{display:inline-block;width:.9em;height:.9em;vertical-align:-.1em;border-radius:2px}
.swatch.inconclusive{background:#d69e2e}.swatch.unchecked{background:#805ad5}
footer{margin-top:32px;color:#718096;font-size:.85em}
@media print{main{max-width:none;padding:0}.verdict{break-inside:avoid}pre{max-height:none}}
"""


def _esc(value: Any) -> str:
    return html.escape(text_of(value), quote=True)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _x(rate: float) -> float:
    """The chart's x coordinate of a rate between 0 and 1."""
    return round(_LABEL_W + rate * _BAR_W, 2)


def _outcome(report: GateReport) -> tuple[str, str]:
    """The verdict word (:func:`tinyeval.report.gate_word`) and its CSS class."""
    word = gate_word(report)
    css = {"INCOMPLETE": "incomplete", "not gated": "ungated", "PASSED": "passed"}
    return word.upper(), css.get(word, "failed")


def _state(v: CategoryVerdict) -> tuple[str, str]:
    """A category's CSS class(es) and the word that says it without colour."""
    if v.outcome == "inconclusive":
        if v.blocking:
            return "blocking inconclusive", "inconclusive, BLOCKS"
        return "inconclusive", "inconclusive"
    if v.blocking:
        return "blocking", "BLOCKS"
    if v.threshold is None:
        return "ungated", "no threshold"
    return "ok", "ok"


def _distinct(rows: Iterable[Mapping[str, Any]], key: str) -> list[str]:
    return sorted({str(r[key]) for r in rows if r.get(key) is not None})


def _facts(pairs: Iterable[tuple[str, str]], css: str = "facts") -> str:
    """A ``<dl>`` of (term, already escaped HTML) pairs."""
    items = "".join(f"<dt>{_esc(k)}</dt><dd>{v}</dd>" for k, v in pairs)
    return f'<dl class="{css}">{items}</dl>'


def _plain_facts(pairs: Iterable[tuple[str, str]], css: str = "facts") -> str:
    return _facts(((k, _esc(v)) for k, v in pairs), css)


def _relative(path: Any, cwd: str) -> str:
    """A path as shown: relative to ``cwd`` when it lies under it, else as given."""
    text = str(path)
    if not os.path.isabs(text):
        return text
    try:
        inside = os.path.relpath(text, cwd)
    except ValueError:  # another drive
        return text
    return text if inside == ".." or inside.startswith(".." + os.sep) else inside


# run_info keys shown elsewhere on the page (header facts, the judge section, the banner)
_SHOWN_APART = frozenset({
    "tinyeval_version", "cases_file", "cases", "selected", "rows", "complete", "stopped_reason",
    "out", "results", "dataset_fingerprint", "dataset_fingerprints", "judge_model", "judges",
    "criteria", "rubric_fingerprints", "elapsed_s", "resumed_rows",
})  # fmt: skip
_PATH_KEYS = frozenset({"out", "results", "cases_file", "review_out", "calibration", "path"})
_LABELS = {"cost_usd": "cost", "review_rows": "rows for review"}


def _info_value(key: str, value: Any, cwd: str) -> str:
    """One run_info value as HTML in words and numbers: no Python literal, no ``key=value``."""
    if key == "usage" and isinstance(value, Mapping):
        line, _ = usage_line({k: v for k, v in value.items() if isinstance(v, int)})
        return _esc(line.removeprefix("tokens: "))
    if key == "cost_usd" and isinstance(value, int | float):
        return _esc(f"about {_extra('cost', 'usd', 'a price')(float(value))}")
    if key == "cache" and isinstance(value, Mapping):
        hits, misses = value.get("hits", 0), value.get("misses", 0)
        text = f"{plural(int(hits or 0), 'hit')}, {plural(int(misses or 0), 'miss', 'misses')}"
        if value.get("path"):
            text += f" in {_relative(value['path'], cwd)}"
        return _esc(text)
    if key == "suite" and isinstance(value, Mapping):
        text = _relative(value.get("path") or "suite file", cwd)
        if value.get("fingerprint"):
            text += f" (fingerprint {value['fingerprint']})"
        if value.get("overridden"):
            text += "; given again on the command line: " + ", ".join(map(str, value["overridden"]))
        return _esc(text)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        pairs = [
            (_label(str(k)), _info_value(str(k), v, cwd))
            for k, v in value.items()
            if v not in (None, "", [], {})
        ]
        return _facts(pairs) if pairs else "—"
    if isinstance(value, list | tuple | set | frozenset):
        if key.startswith("gate_settings"):  # setting names, as the text summary words them
            return ", ".join(_esc(_label(str(item))) for item in value)
        return ", ".join(_info_value(key, item, cwd) for item in value)
    if isinstance(value, float):
        return _esc(f"{value:g}")
    if isinstance(value, int):
        return _esc(f"{value:,}")
    if key in _PATH_KEYS:
        return _esc(_relative(value, cwd))
    return _esc(value)


def _label(key: str) -> str:
    return _LABELS.get(key, key.replace("_", " "))


def _unchecked_html(report: GateReport) -> list[str]:
    return [f'<p class="unchecked">{_esc(line)}</p>' for line in _unchecked_lines(report)]


def _banner(report: GateReport, info: Mapping[str, Any]) -> list[str]:
    word, css = _outcome(report)
    how = (
        f"the lower end of the {report.confidence:.0%} Wilson interval"
        if report.inconclusive == "block"
        else "the observed pass rate"
    )
    parts = [
        f'<section class="verdict {css}" aria-label="gate verdict">',
        f'<p class="outcome">Gate {word}</p>',
    ]
    if not report.complete:
        parts.append(f'<p class="missing">Missing: {_esc(missing(report))}</p>')
        if info.get("stopped_reason"):
            parts.append(f"<p>The run stopped early: {_esc(info['stopped_reason'])}.</p>")
        parts.append(
            "<p>No gate is decided on missing cases: the figures below are those of the rows "
            "present.</p>"
        )
    else:
        parts.append(f"<p>{_esc(_gate_line(report).split(' — ', 1)[-1])}</p>")
    if report.undecided:
        items = "".join(f"<li>{_esc(v.category)}: {_esc(_mark(v))}</li>" for v in report.undecided)
        parts.append(
            '<div class="undecided"><p>Inconclusive (the interval straddles the threshold: the '
            f"suite is too small to tell):</p><ul>{items}</ul></div>"
        )
    parts += _unchecked_html(report)
    parts += [
        f'<p class="note">Each category is gated on {how}; the global line never gates.</p>',
        "</section>",
    ]
    return parts


def _html_header(
    rows: list[Mapping[str, Any]],
    report: GateReport,
    title: str,
    run_info: Mapping[str, Any] | None,
    cwd: str,
) -> str:
    info = dict(run_info or {})
    judged_rows = [r for r in rows if verdicts(r)]
    fingerprints = _distinct(rows, "dataset_fingerprint")
    if not fingerprints:
        given = info.get("dataset_fingerprints") or info.get("dataset_fingerprint") or []
        fingerprints = sorted({str(f) for f in ([given] if isinstance(given, str) else given)})
    errors = sum(1 for r in rows if r.get("status") == "error")
    cases = plural(len(rows), "result row")
    in_file, selected = info.get("cases"), info.get("selected")
    if isinstance(in_file, int) and in_file != len(rows):
        cases += f" of {plural(in_file, 'case')} in the cases file"
        if isinstance(selected, int) and selected != in_file:
            cases += f" ({selected:,} selected)"
    facts = [("cases", cases)]
    if report.overall.total != len(rows):
        counted = plural(report.overall.total, "case")
        facts.append(("gate counts", f"{counted} (not the rows listed here)"))
    for key, name in (("cases_file", "cases file"), ("out", "results file"),
                      ("results", "results file")):  # fmt: skip
        if info.get(key):
            facts.append((name, _relative(info[key], cwd)))
    facts.append(("errored", f"{errors} (counted as not passed)"))
    dataset = ", ".join(fingerprints) or "unknown"
    if len(fingerprints) > 1:
        dataset += " — rows from more than one dataset"
    facts.append(("dataset fingerprint", dataset))
    models = _distinct(judged_rows, "judge_model")
    if not models and info.get("judge_model"):
        models = [str(info["judge_model"])]
    facts.append(("judge model", ", ".join(models) or "no judge"))
    versions = set(_distinct(rows, "tinyeval_version"))
    if info.get("tinyeval_version"):
        versions.add(str(info["tinyeval_version"]))
    if versions:
        facts.append(("tinyeval version", ", ".join(sorted(versions))))
    started, finished = _distinct(rows, "started_at"), _distinct(rows, "finished_at")
    if started and finished:
        facts.append(("cases ran", f"{started[0]} → {finished[-1]}"))
    if isinstance(info.get("elapsed_s"), int | float):
        took = f"{info['elapsed_s']:.2f} s"
        resumed = info.get("resumed_rows")
        if isinstance(resumed, int) and resumed:
            took += f" in this session; {plural(resumed, 'row')} kept from an earlier run"
        facts.append(("elapsed", took))
    parts = [f"<header>\n<h1>{_esc(title)}</h1>", *_banner(report, info), _plain_facts(facts)]
    extra = [
        (_label(str(k)), shown)
        for k, v in info.items()
        if str(k) not in _SHOWN_APART and (isinstance(v, bool) or v not in (None, "", [], {}, 0))
        for shown in [_info_value(str(k), v, cwd)]
        if shown
    ]
    if extra:
        parts.append("<details open><summary>run details</summary>")
        parts.append(_facts(extra))
        parts.append("</details>")
    parts.append("</header>")
    return "\n".join(parts)


def _html_gate_table(report: GateReport) -> str:
    conf = f"{report.confidence:.0%}"
    lines = [
        '<section aria-labelledby="h-categories">',
        '<h2 id="h-categories">Pass rate per category</h2>',
        '<table class="gate">',
        "<thead><tr>"
        '<th scope="col">category</th>'
        f'<th scope="col">pass rate [{conf} Wilson]</th>'
        '<th scope="col">unchecked</th>'
        '<th scope="col">threshold</th>'
        '<th scope="col">gate</th>'
        "</tr></thead>",
        "<tbody>",
    ]
    for v in report.categories:
        css, _ = _state(v)
        mark = _esc(_mark(v))
        if v.outcome == "inconclusive":
            mark = mark.replace(
                "inconclusive", '<strong class="inconclusive-word">inconclusive</strong>', 1
            )
            mark = mark.replace("(BLOCKS)", '(<strong class="blocks">BLOCKS</strong>)', 1)
        elif v.blocking:
            mark = mark.replace("BLOCKS", '<strong class="blocks">BLOCKS</strong>', 1)
        lines.append(
            f'<tr class="{css}"><th scope="row">{_esc(v.category)}</th>'
            f'<td class="rate">{_esc(_rate_cell(v, report.confidence))}</td>'
            f'<td class="num">{v.unchecked}</td>'
            f'<td class="rate">{_esc(_pct(v.threshold))}</td><td>{mark}</td></tr>'
        )
    overall = report.overall
    lines += [
        "</tbody>",
        '<tfoot><tr class="global"><th scope="row">global</th>'
        f'<td class="rate">{_esc(_rate_cell(overall, report.confidence))}</td>'
        f'<td class="num">{overall.unchecked}</td>'
        "<td>—</td><td>shown, never gates</td></tr></tfoot>",
        "</table>",
        "</section>",
    ]
    return "\n".join(lines)


def _svg_row(v: CategoryVerdict, top: float, css: str, word: str, report: GateReport) -> str:
    middle = top + _ROW_H / 2
    bar_top = middle - _BAR_H / 2
    rate = _rate_cell(v, report.confidence)
    threshold = "none" if v.threshold is None else _pct(v.threshold)
    mark = "shown, never gates" if css == "global" else _mark(v)
    unchecked = f"; {v.unchecked} unchecked" if v.unchecked else ""
    tooltip = f"{v.category}: {rate}{unchecked}; threshold {threshold}; {mark}"
    parts = [
        f'<g class="{css}">',
        f"<title>{_esc(tooltip)}</title>",
        f'<text class="name" x="{_LABEL_W - 10}" y="{middle}" dy="0.35em" text-anchor="end">'
        f"{_esc(_clip(v.category, _NAME_CHARS))}</text>",
        f'<rect class="track" x="{_LABEL_W}" y="{bar_top}" width="{_BAR_W}" height="{_BAR_H}"/>',
    ]
    if v.rate is not None and v.low is not None and v.high is not None:
        low, high = _x(v.low), _x(v.high)
        parts.append(
            f'<rect class="bar" x="{_LABEL_W}" y="{bar_top}" '
            f'width="{round(v.rate * _BAR_W, 2)}" height="{_BAR_H}"/>'
        )
        if v.unchecked and v.total:
            parts.append(
                f'<rect class="unchecked" x="{_x(v.rate)}" y="{bar_top}" '
                f'width="{round(v.unchecked / v.total * _BAR_W, 2)}" height="{_BAR_H}"/>'
            )
        parts += [
            f'<line class="interval" x1="{low}" x2="{high}" y1="{middle}" y2="{middle}"/>',
            f'<line class="cap" x1="{low}" x2="{low}" y1="{middle - 5}" y2="{middle + 5}"/>',
            f'<line class="cap" x1="{high}" x2="{high}" y1="{middle - 5}" y2="{middle + 5}"/>',
        ]
    if v.threshold is not None:
        tick = _x(v.threshold)
        parts.append(
            f'<line class="threshold" x1="{tick}" x2="{tick}" '
            f'y1="{bar_top - 6}" y2="{bar_top + _BAR_H + 6}"/>'
        )
    count = f' <tspan class="count">· {v.unchecked} unchecked</tspan>' if v.unchecked else ""
    parts.append(
        f'<text class="mark" x="{_LABEL_W + _BAR_W + 14}" y="{middle}" dy="0.35em">'
        f'<tspan class="word">{_esc(word)}</tspan> {_esc(rate)}{count}</text>'
    )
    parts.append("</g>")
    return "\n".join(parts)


def _html_chart(report: GateReport) -> str:
    count = len(report.categories)
    rows_bottom = _AXIS_H + count * _ROW_H
    height = rows_bottom + _GLOBAL_GAP + _ROW_H + 6
    width = _LABEL_W + _BAR_W + _TEXT_W
    conf = f"{report.confidence:.0%}"
    blocking = ", ".join(c.category for c in report.blocking) or "none"
    undecided = ", ".join(c.category for c in report.undecided)
    parts = [
        '<section aria-labelledby="h-chart">',
        '<h2 id="h-chart">Chart</h2>',
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" '
        'aria-labelledby="chart-title chart-desc">',
        f'<title id="chart-title">Pass rate per category with its {conf} Wilson interval '
        "and threshold</title>",
        f'<desc id="chart-desc">Blocking categories: {_esc(blocking)}. '
        + (f"Inconclusive: {_esc(undecided)}. " if undecided else "")
        + "The global line is shown and never gates.</desc>",
        '<g class="axis">',
    ]
    for step in range(5):
        x = _x(step / 4)
        parts.append(
            f'<line class="grid" x1="{x}" x2="{x}" y1="{_AXIS_H - 6}" y2="{height - 4}"/>'
            f'<text x="{x}" y="{_AXIS_H - 12}" text-anchor="middle">{step * 25}%</text>'
        )
    parts.append("</g>")
    for i, v in enumerate(report.categories):
        css, word = _state(v)
        parts.append(_svg_row(v, _AXIS_H + i * _ROW_H, css, word, report))
    rule = rows_bottom + _GLOBAL_GAP / 2
    parts.append(f'<line class="rule" x1="0" x2="{width}" y1="{rule}" y2="{rule}"/>')
    parts.append(
        _svg_row(report.overall, rows_bottom + _GLOBAL_GAP, "global", "never gates", report)
    )
    parts += [
        "</svg>",
        f'<p class="note">Bar: pass rate. Whisker: its {conf} Wilson interval. '
        "Thick dark tick: the category's threshold. "
        "<strong>BLOCKS</strong> (red) is below its threshold, <em>ok</em> (green) meets it "
        'with its whole interval, <span class="swatch inconclusive"></span> '
        "<em>inconclusive</em> (amber) meets it on its rate but its interval reaches below it, "
        "<em>no threshold</em> (blue) is not gated; "
        '<span class="swatch unchecked"></span> purple: cases nothing checked (never a pass); '
        "the grey global line never gates.</p>",
        "</section>",
    ]
    return "\n".join(parts)


def _criterion_text(name: str, given: Mapping[str, Any], seen: set[str]) -> list[str]:
    """What the judge ``name`` was asked, in words: the run's own text, else the rows'."""
    from ..judge import CRITERIA

    if isinstance(given.get(name), str) and given[name].strip():
        return [given[name]]
    return sorted({CRITERIA.get(text, text) for text in seen if text})


def _new_judge_counts() -> dict[str, Any]:
    zeros: dict[str, Any] = dict.fromkeys(("judged", "passed", "unparsed", "errors", "split"), 0)
    return {**zeros, "specs": set(), "reported": set(), "rubrics": set(), "criteria": set()}


def _judge_counts(rows: list[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per judge name: verdicts, PASS, unparsed replies, call errors, split votes, models."""
    counts: dict[str, dict[str, Any]] = {}
    for row in rows:
        for name, verdict in verdicts(row).items():
            c = counts.setdefault(str(name), _new_judge_counts())
            c["judged"] += 1
            c["passed"] += verdict.get("verdict") == "PASS"
            if verdict.get("verdict") is None:
                c["errors" if verdict.get("failure") == "error" else "unparsed"] += 1
            if len(verdict.get("votes") or ()) > 1 and not verdict.get("unanimous", True):
                c["split"] += 1
            if row.get("judge_model"):
                c["specs"].add(str(row["judge_model"]))
            if verdict.get("model"):
                c["reported"].add(str(verdict["model"]))
            if verdict.get("rubric_fingerprint"):
                c["rubrics"].add(str(verdict["rubric_fingerprint"]))
            if isinstance(verdict.get("criterion"), str):
                c["criteria"].add(verdict["criterion"])
    return counts


def _model_text(specs: set[str], reported: set[str]) -> str:
    """Each model once: the specs the run used, then any other name the server reported."""
    # a server reporting "m" for the spec "openai:org/m" names the same model
    known = set(specs) | {spec.partition(":")[2] for spec in specs}
    known |= {name.rpartition("/")[2] for name in known}
    others = sorted(name for name in reported if name not in known)
    text = ", ".join(sorted(specs))
    if others:
        said = ", ".join(others)
        text = f"{text} (reported: {said})" if text else said
    return text or "—"


def _html_judges(
    rows: list[Mapping[str, Any]], confidence: float, criteria: Mapping[str, Any]
) -> str:
    counts = _judge_counts(rows)
    head = ['<section aria-labelledby="h-judges">', '<h2 id="h-judges">Judge</h2>']
    if not counts:
        return "\n".join([*head, '<p class="note">No judge ran on these rows.</p>', "</section>"])
    lines = list(head)
    if len(counts) > 1:  # with one judge, its row of the table says all of it
        judged = sum(c["judged"] for c in counts.values())
        unparsed = sum(c["unparsed"] for c in counts.values())
        errors = sum(c["errors"] for c in counts.values())
        cases = sum(1 for r in rows if verdicts(r))
        lines.append(_plain_facts([
            ("verdicts", f"{judged} on {plural(cases, 'case')}"),
            ("did not parse",
             f"{format_rate(unparsed, judged, confidence)} (counted as not passed)"),
            ("call errors", f"{errors} (the case is an error row)"),
        ]))  # fmt: skip
    lines += [
        '<table class="judges">',
        "<thead><tr>"
        '<th scope="col">judge</th><th scope="col">model</th><th scope="col">rubric</th>'
        '<th scope="col">verdicts</th><th scope="col">PASS</th>'
        '<th scope="col">did not parse (counted as not passed)</th>'
        '<th scope="col">call errors</th><th scope="col">split votes</th>'
        "</tr></thead>",
        "<tbody>",
    ]
    asked = []
    for name, c in counts.items():
        rubrics = " ".join(
            f'<code title="{_esc(r)}">{_esc(r[:12])}</code>' for r in sorted(c["rubrics"])
        )
        lines.append(
            f'<tr><th scope="row">{_esc(name)}</th>'
            f'<td class="model">{_esc(_model_text(c["specs"], c["reported"]))}</td>'
            f"<td>{rubrics or '—'}</td>"
            f'<td class="num">{c["judged"]}</td>'
            f'<td class="rate">{_esc(format_rate(c["passed"], c["judged"], confidence))}</td>'
            f'<td class="rate">{_esc(format_rate(c["unparsed"], c["judged"], confidence))}</td>'
            f'<td class="num">{c["errors"]}</td><td class="num">{c["split"]}</td></tr>'
        )
        texts = _criterion_text(name, criteria, c["criteria"])
        asked.append((name, "<br>".join(_esc(t) for t in texts) or "not recorded"))
    lines += ["</tbody>", "</table>", "<h3>What each judge was asked</h3>"]
    lines += [_facts(asked, "facts criteria"), "</section>"]
    return "\n".join(lines)


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _reasons(row: Mapping[str, Any]) -> list[str]:
    """Every reason a row did not pass: its error, every failing check, every judge not PASS."""
    status = row.get("status")
    reasons = []
    if status == "error":
        reasons.append(f"error: {_one_line(row.get('error'))}")
    if status == "unchecked":
        why = row.get("judge_skipped") or "no check and no judge looked at it"
        reasons.append(f"unchecked: {_one_line(why)}")
    checks = row.get("checks")
    details = row.get("check_details")
    if isinstance(checks, Mapping):
        details = details if isinstance(details, Mapping) else {}
        for name, ok in checks.items():
            if not ok:
                said = details.get(name)
                reasons.append(f"{name}: {_one_line(said)}" if said else str(name))
    for name, judge in verdicts(row).items():
        if judge.get("verdict") == "PASS" or "winner" in judge:
            continue
        if judge.get("verdict") is not None:
            reasons.append(f"judge {name}: {_one_line(judge.get('reason') or judge['verdict'])}")
        elif judge.get("failure") == "error":
            if status != "error":
                reasons.append(f"judge {name}: the call failed: {_one_line(judge.get('error'))}")
        else:
            replies = [str(r) for r in judge.get("raw") or [] if str(r).strip()]
            said = (
                f': replied "{shorten(_one_line(replies[0]), _EXCERPT_CHARS)}"'
                if replies
                else ": the reply was empty"
            )
            reasons.append(f"judge {name}: no verdict ({judge.get('failure') or 'unparsed'}){said}")
    return reasons or [describe_failure(row, width=500)]


def _block(value: Any) -> str:
    """A value of a case as a ``<pre>`` block: text as it is, anything else as indented JSON."""
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if not text.strip():
        return '<p class="note">(empty)</p>'
    return f"<pre>{_esc(_clip(text, _DETAIL_CHARS))}</pre>"


def _tool_call_text(call: Any) -> str:
    """``name(arguments)`` for a tool call in any of the shapes the checks read."""
    if isinstance(call, str):
        return f"{call}()"
    if not isinstance(call, Mapping):
        return _one_line(call)
    function = call.get("function")
    inner: Mapping[str, Any] = function if isinstance(function, Mapping) else call
    name = inner.get("name") or "?"
    arguments = inner.get("arguments", call.get("input"))
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    if arguments in (None, "", {}):
        shown = ""
    elif isinstance(arguments, str):
        shown = arguments
    else:
        shown = json.dumps(arguments, ensure_ascii=False, default=str)
    return f"{name}({shown})"


def _is_chat(value: Any) -> TypeGuard[list[Mapping[str, Any]]]:
    """True for a message list (``[{"role": ..., "content": ...}, ...]``)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, Mapping) and "role" in m for m in value)
    )


def _content_text(content: Any, calls: list[str]) -> list[str]:
    """A message's content as lines; its tool-use blocks are appended to ``calls`` too."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return [json.dumps(content, ensure_ascii=False, default=str)]
    lines = []
    for block in content:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if isinstance(block, str):
            lines.append(block)
        elif kind == "text" and isinstance(block, Mapping):
            lines.append(str(block.get("text", "")))
        elif kind == "tool_use":
            calls.append(_tool_call_text(block))
            lines.append(f"calls {calls[-1]}")
        elif kind == "tool_result" and isinstance(block, Mapping):
            inner = _content_text(block.get("content"), [])
            lines.append(f"tool result ({block.get('tool_use_id')}): " + " ".join(inner))
        else:
            lines.append(json.dumps(block, ensure_ascii=False, default=str))
    return lines


def _transcript(messages: list[Mapping[str, Any]]) -> tuple[str, list[str]]:
    """A conversation as ``role: text`` lines, and the tool calls it holds, in order."""
    lines: list[str] = []
    calls: list[str] = []
    for message in messages:
        role = str(message.get("role"))
        if message.get("tool_call_id"):
            role += f" ({message['tool_call_id']})"
        said = _content_text(message.get("content"), calls)
        for call in message.get("tool_calls") or ():
            calls.append(_tool_call_text(call))
            said.append(f"calls {calls[-1]}")
        lines.append(f"{role}: " + "\n  ".join(said) if said else f"{role}: (nothing)")
    return "\n".join(lines), calls


def _case_details(row: Mapping[str, Any], columns: int) -> str:
    """The collapsed row under a failed case: input, context, tool calls, output, the judges."""
    parts: list[tuple[str, str]] = []
    shown: list[str] = []
    calls: list[str] = []
    given = row.get("input")
    if _is_chat(given):
        text, calls = _transcript(given)
        parts.append(("conversation", _block(text)))
        shown.append("conversation")
    elif given not in (None, ""):
        parts.append(("input", _block(given)))
        shown.append("input")
    if row.get("context") not in (None, ""):
        parts.append(("context", _block(row["context"])))
        shown.append("context")
    listed = row.get("tool_calls")
    if isinstance(listed, list | tuple):
        calls += [_tool_call_text(c) for c in listed]
    if calls:
        parts.append(("tool calls", _block("\n".join(calls))))
        shown.append("tool calls")
    output = row.get("output")
    if isinstance(output, str) and len(output) > _OUTPUT_CHARS:
        parts.append(("output, in full", _block(output)))
        shown.append("the whole output")
    replies = False
    for name, judge in verdicts(row).items():
        if "winner" in judge:
            continue
        said = judge.get("verdict") or f"no verdict ({judge.get('failure') or 'unparsed'})"
        body = [f"<p>{_esc(said)}"]
        if judge.get("reason") and judge.get("verdict") is not None:
            body[0] += f": {_esc(_one_line(judge['reason']))}"
        body[0] += "</p>"
        if judge.get("verdict") is None:
            if judge.get("failure") == "error":
                body.append(f"<p>{_esc(_one_line(judge.get('error')))}</p>")
            raw = [str(r) for r in judge.get("raw") or []]
            for number, reply in enumerate(raw, start=1):
                which = f"reply {number} of {len(raw)}" if len(raw) > 1 else "its reply"
                if reply.strip():
                    body.append(f'<p class="note">{which}, as received:</p>{_block(reply)}')
                else:
                    body.append(f'<p class="note">{which} was empty</p>')
            replies = replies or bool(raw)
        parts.append((f"judge {name}", "".join(body)))
    if not parts:
        return ""
    if replies:
        shown.append("judge reply")
    elif verdicts(row):
        shown.append("judge verdict")
    summary = "details: " + ", ".join(shown)
    return (
        f'<tr class="more"><td colspan="{columns}"><details class="case">'
        f"<summary>{_esc(summary)}</summary>{_facts(parts)}</details></td></tr>"
    )


def _output_cell(output: Any) -> str:
    if output is None:
        return '<td class="output">—</td>'
    text = str(output)
    if not text.strip():
        return '<td class="output empty">(empty output)</td>'
    return f'<td class="output">{_esc(_clip(text, _OUTPUT_CHARS))}</td>'


def _html_failures(rows: list[Mapping[str, Any]], report: GateReport) -> str:
    head = [
        '<section aria-labelledby="h-failures">',
        '<h2 id="h-failures">Cases that did not pass</h2>',
    ]
    failed = [r for r in rows if r.get("status") != "pass"]
    if not failed:
        return "\n".join([*head, f'<p class="note">{_all_passed(len(rows))}</p>', "</section>"])
    order = {v.category: i for i, v in enumerate(report.categories)}
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in failed:
        groups.setdefault(str(row.get("category")), []).append(row)
    in_category: dict[str, int] = {}
    for row in rows:
        key = str(row.get("category"))
        in_category[key] = in_category.get(key, 0) + 1
    origins = any(r.get("origin") for r in failed)
    columns = 5 if origins else 4
    lines = [
        *head,
        '<table class="failures">',
        f"<caption>{len(failed)} of {plural(len(rows), 'case')}, every one listed, "
        "grouped by category, each with every reason it did not pass; "
        f"outputs cut at {_OUTPUT_CHARS} characters. Open a case's details for its input, "
        "context, tool calls and the judge's reply.</caption>",
        '<thead><tr><th scope="col">id</th>'
        + ('<th scope="col">origin</th>' if origins else "")
        + '<th scope="col">status</th><th scope="col">why</th><th scope="col">output</th>'
        "</tr></thead>",
    ]
    for category in sorted(groups, key=lambda name: (order.get(name, len(order)), name)):
        members = sorted(groups[category], key=lambda r: str(r.get("id")))
        lines.append("<tbody>")
        lines.append(
            f'<tr class="group"><th scope="rowgroup" colspan="{columns}">{_esc(category)}: '
            f"{len(members)} of {in_category[category]} did not pass</th></tr>"
        )
        for row in members:
            status = str(row.get("status"))
            more = _case_details(row, columns)
            css = "case" + (f" {status}" if status in ("error", "unchecked") else "")
            css += " has-more" if more else ""
            why = "".join(f"<li>{_esc(reason)}</li>" for reason in _reasons(row))
            lines.append(
                f'<tr class="{css}"><th scope="row">{_esc(row.get("id"))}</th>'
                + (f"<td>{_esc(row.get('origin') or '—')}</td>" if origins else "")
                + f'<td class="status">{_esc(status)}</td>'
                f'<td class="why"><ul class="why">{why}</ul></td>'
                f"{_output_cell(row.get('output'))}</tr>"
            )
            if more:
                lines.append(more)
        lines.append("</tbody>")
    lines += ["</table>", "</section>"]
    return "\n".join(lines)


def _all_passed(count: int) -> str:
    if count == 1:
        return "The 1 case passed."
    return "No cases." if count == 0 else f"All {count} cases passed."


def html_report(
    rows: list[Mapping[str, Any]],
    report: GateReport,
    *,
    title: str = "tinyeval report",
    run_info: Mapping[str, Any] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> str:
    """One self-contained HTML page to debug a run from: the verdict, the table, a chart, the
    judges and what they were asked, and every case that did not pass with why.

    The page needs nothing but itself: inline CSS, an inline SVG chart, no
    script, no font, image or request from elsewhere (a Content-Security-Policy
    says so to the browser). It holds the gate's verdict in words: the blocking
    categories, the inconclusive ones with about how many more cases would
    decide them, the cases nothing checked (with ids), and, when the rows miss
    cases or shards of their run, a banner naming what is missing. Then each
    figure once: the cases, the dataset fingerprint(s), judge model(s) and
    versions found in ``rows``, and whatever else ``run_info`` carries (as
    ``summary_dict`` takes it; booleans, token usage and cache figures in words
    and numbers, paths relative to ``cwd``, the working directory by default);
    the per-category table of the text summary with its unchecked column; a bar
    per category with its Wilson interval, threshold tick and unchecked share,
    each state said in words as well as colour, the global line greyed as never
    gating; per judge its verdicts, unparsed replies and call errors, and the
    criterion's text (``run_info["criteria"]``, else the rows', built-in names
    resolved to their text); and every case that did not pass, by category,
    with every failing check and judge reason, and its input, context, tool
    calls and the judge's reply collapsed under it.

    The table and chart come from ``report``; the rest from ``rows``. Every
    text taken from the rows (ids, categories, outputs, reasons) is escaped.

    >>> from tinyeval.gating import gate
    >>> rows = [{"id": "t-1", "category": "tone", "status": "pass"},
    ...         {"id": "t-2", "category": "tone", "status": "fail",
    ...          "checks": {"max_words": False}, "output": "<b>far too long</b>"}]
    >>> page = html_report(rows, gate({"tone": {"passed": 1, "total": 2}}, {"tone": 0.9}))
    >>> page.startswith("<!DOCTYPE html>"), "Gate FAILED" in page
    (True, True)
    >>> "&lt;b&gt;far too long&lt;/b&gt;" in page, "<b>far" in page
    (True, False)
    """
    rows = list(rows)
    word, _ = _outcome(report)
    from .. import __version__

    here = os.fspath(cwd) if cwd is not None else os.getcwd()
    info = run_info or {}
    criteria = info.get("criteria") if isinstance(info.get("criteria"), Mapping) else {}
    versions = set(_distinct(rows, "tinyeval_version"))
    if info.get("tinyeval_version"):
        versions.add(str(info["tinyeval_version"]))
    footer = "One self-contained file: no script, nothing loaded from elsewhere."
    if versions != {__version__}:
        footer = f"Written by tinyeval {__version__}. {footer}"
    body = "\n".join(
        [
            _html_header(rows, report, title, run_info, here),
            _html_gate_table(report),
            _html_chart(report),
            _html_judges(rows, report.confidence, criteria or {}),
            _html_failures(rows, report),
            f"<footer>{_esc(footer)}</footer>",
        ]
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_esc(title)}: gate {word}</title>\n"
        f"<style>{_HTML_STYLE}</style>\n"
        f"</head>\n<body>\n<main>\n{text_of(body)}\n</main>\n</body>\n</html>\n"
    )


def html_page(
    report: GateReport, rows: list[Mapping[str, Any]], *, run_info: Mapping[str, Any] | None
) -> str:
    """The page of :func:`html_report` (the ``html`` report of ``write_reports``)."""
    return html_report(rows, report, run_info=run_info)
