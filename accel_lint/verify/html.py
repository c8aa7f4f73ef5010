"""`verify --report FILE.html`: one self-contained HTML file (inline CSS and SVG,
no script, nothing fetched) with the verdict table, the loss curves of the
original and the fixed script over the noise band, the per-step difference on a
log scale, and the speed and memory of each fix as bars."""

from __future__ import annotations

import math
import re
from html import escape
from pathlib import Path

from accel_lint.verify import compare as cmp
from accel_lint.verify.report import Report, RunSeries
from accel_lint.verify.svg import Band, Bar, Chart, Line, bar_chart, line_chart
from accel_lint.verify.table import num, place, speed_words
from accel_lint.verify.timing import FASTER, NOT_APPLICABLE, SLOWER, Side

ORIGINAL, FIXED, NOISE, NEUTRAL = "#4c78a8", "#e45756", "#9d9d9d", "#9ecae9"
LABEL_COLOR = {FASTER: "#54a24b", SLOWER: "#e45756", NOT_APPLICABLE: "#bab0ac"}
# memory is judged apart from speed: a growth past this factor is drawn as more
# memory, a shrink past it as less, anything between as no change
MEMORY_CHANGE = 1.2
MORE_MEMORY, LESS_MEMORY = "#f58518", "#54a24b"
VERDICT_CLASS = {cmp.HOLDS: "holds", cmp.FAILS: "fails", cmp.NOT_VERIFIABLE: "unverified"}

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;
max-width:1100px;color:#222;line-height:1.45;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;
padding-bottom:4px}.meta{color:#666;margin:0 0 12px}.summary{font-size:16px;font-weight:600;
padding:8px 12px;border-radius:6px;display:inline-block}
.summary.ok{background:#e3f4e1;color:#225522}.summary.bad{background:#fbe3e3;color:#8a1f1f}.summary.warn{background:#fdf3d8;color:#6b5200}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:5px 8px;
border-bottom:1px solid #eee;vertical-align:top}th{background:#f6f6f6;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.badge{display:inline-block;padding:1px 7px;border-radius:9px;font-size:12px;font-weight:600}
.holds{background:#e3f4e1;color:#225522}.fails{background:#fbe3e3;color:#8a1f1f}
.unverified{background:#fdf3d8;color:#6b5200}.unsafe{background:#fde8d4;color:#8a4b00}
.safe{background:#e8eef7;color:#234}.why{color:#555;font-size:12px}
figure{margin:12px 0 20px}figcaption{font-weight:600;margin-bottom:4px}.unit{color:#777;
font-weight:400}svg.chart{display:block;max-width:100%;height:auto}.plot{fill:#fcfcfc;stroke:#ccc}
.grid{stroke:#e6e6e6}.tick{font-size:11px;fill:#666}.axis{font-size:12px;fill:#444}
.label{font-size:12px;fill:#333}.whisker{stroke:#333;stroke-width:1.2}.legend{font-size:12px;
color:#444}.key{margin-right:14px;white-space:nowrap}.key i{display:inline-block;width:14px;
height:4px;margin-right:5px;vertical-align:middle}.note{color:#666;font-size:12px;margin:4px 0}
.seen{color:#225522;font-weight:600}.notseen{color:#8a6d00;font-weight:600}.na{color:#888}
ul{margin:4px 0;padding-left:20px;font-size:13px}h3{font-size:14px;margin:16px 0 6px}
code{font-size:12px;background:#f3f3f3;padding:0 3px}
details{margin-top:4px}summary{cursor:pointer;color:#345;font-size:12px}
pre.diff{font-size:12px;background:#fafafa;border:1px solid #e4e4e4;padding:6px;margin:4px 0;
overflow-x:auto;white-space:pre;max-width:calc(100vw - 48px)}pre.diff .add{color:#1a6b1a;
background:#eaf7ea;display:block}pre.diff .del{color:#8a1f1f;background:#fbeaea;display:block}
pre.diff .hunk{color:#777;display:block}.cmd{font-family:ui-monospace,monospace;font-size:12px;
background:#f3f3f3;padding:4px 8px;display:block;overflow-x:auto;white-space:pre}
.tablewrap{overflow-x:auto}
@media (max-width:700px){body{margin:12px auto;padding:0 8px}table{font-size:12px}
th,td{padding:4px 5px}table.verdicts,table.verdicts tbody,table.verdicts tr,
table.verdicts td{display:block;width:auto}table.verdicts tr:first-child{display:none}
table.verdicts td:empty{display:none}table.verdicts tr{border-top:1px solid #ccc;
padding:4px 0}table.verdicts td{border:0}table.verdicts td.num{text-align:left}
table.verdicts td.num::before{content:attr(data-label) ": ";color:#777}}
"""


def md(text: str) -> str:
    """A message as HTML: escaped, with `code` spans rendered (the messages are
    written in markdown's backticks for the terminal and the rule pages)."""
    return re.sub(r"`([^`]+)`", lambda m: f"<code>{m.group(1)}</code>", escape(text))


def diff_html(diff: str) -> str:
    lines = []
    for line in diff.splitlines():
        kind = (
            "hunk"
            if line.startswith("@@")
            else "add"
            if line.startswith("+") and not line.startswith("+++")
            else "del"
            if line.startswith("-") and not line.startswith("---")
            else ""
        )
        body = escape(line) or " "
        lines.append(f'<span class="{kind}">{body}</span>' if kind else body + "\n")
    return '<pre class="diff">' + "".join(lines) + "</pre>"


def write_report(report: Report, path: Path) -> None:
    path.write_text(render_html(report), encoding="utf-8")


def render_html(report: Report) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>accel-lint verify {escape(report.script)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>accel-lint verify <code>{escape(report.script)}</code></h1>",
        f'<p class="meta">{escape(_meta(report))}</p>',
        f'<code class="cmd">{escape(report.command)}</code>' if report.command else "",
        _summary(report),
    ]
    if report.problem is not None:
        problem = report.problem
        parts.append(
            f'<p class="summary bad">The run <code>{escape(problem.run)}</code> did not complete: '
            f"{escape(problem.message)}</p><pre>{escape(problem.output)}</pre>"
        )
        if problem.hint:
            parts.append(f'<p class="summary warn">Hint: {md(problem.hint)}</p>')
        shared = report.shared_reason()
        if shared is not None:
            parts.append(f'<p class="note">Every fix: {md(shared)}.</p>')
    parts += [
        f'<p class="summary warn">Warning: {md(write.sentence())}</p>'
        for write in report.refused_writes
    ]
    parts += [_verdicts(report), _curves(report), _speed(report), _opinion(report), _notes(report)]
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)


def _meta(report: Report) -> str:
    bits = [f"accel-lint {report.version}"] if report.version else []
    bits.append(report.device)
    if report.torch:
        bits.append(f"torch {report.torch}")
    if report.python:
        bits.append(report.python)
    ran = report.steps_run
    if ran is not None and ran < report.steps:
        bits.append(f"{ran} steps (the script ended before --steps {report.steps})")
    else:
        bits.append(f"runs stop after {report.steps} steps")
    bits.append(f"{report.repeat} timing rounds" if report.repeat else "no timing")
    return " · ".join(bits)


def _summary(report: Report) -> str:
    if not report.fixes:
        return '<p class="summary warn">No fix applies to this script: nothing to verify.</p>'
    kind = {0: "ok", 1: "bad"}.get(report.exit_code, "warn")
    words = report.summary()
    return f'<p class="summary {kind}">{escape(words[:1].upper() + words[1:])}</p>'


def _verdicts(report: Report) -> str:
    if not report.fixes:
        return _unfixed(report)
    rows = []
    for item in report.fixes:
        verdict = item.verdict
        name = verdict.verdict if verdict else cmp.NOT_VERIFIABLE
        shared = report.shared_reason()
        why = (
            [verdict.reason] if verdict and verdict.reason and verdict.reason != shared else []
        ) + (verdict.notes if verdict else ["not run"])
        speed = item.speed
        speed_cell = ""
        if speed is not None:
            color = LABEL_COLOR.get(speed.label, "#666")
            speed_cell = f'<span style="color:{color};font-weight:600">{escape(speed.label)}</span>'
            if speed.variant is not None:
                speed_cell += (
                    f'<div class="why">{escape(speed_words(speed.variant.speed))} '
                    f"(A-vs-A: the original against itself)</div>"
                )
                if speed.variant.cause:
                    speed_cell += f'<div class="why">likely cause: {md(speed.variant.cause)}</div>'
            elif speed.reason:
                speed_cell += f'<div class="why">{md(speed.reason)}</div>'
        rows.append(
            "<tr>"
            f"<td>{escape(place(item))}</td><td><b>{escape(item.code)}</b>"
            f'<div class="why">{md(item.message)}</div></td>'
            f'<td><span class="badge {escape(item.applicability)}">{escape(item.applicability)}'
            "</span></td>"
            f"<td>{escape(item.equivalence.value)}</td>"
            f'<td><span class="badge {VERDICT_CLASS.get(name, "")}">{escape(name)}</span>'
            f'<div class="why">{md("; ".join(why))}</div></td>'
            f'<td class="num" data-label="max loss diff">'
            f"{num(verdict.max_loss_diff if verdict else None)}</td>"
            f'<td class="num" data-label="max param diff">'
            f"{num(verdict.max_param_diff if verdict else None)}</td>"
            f"<td>{speed_cell}</td></tr>"
        )
        if item.diff:
            rows.append(
                f'<tr class="fix"><td></td><td colspan="7"><details open><summary>the fix '
                f"({escape(item.code)} at {escape(place(item))})</summary>"
                f"{diff_html(item.diff)}</details></td></tr>"
            )
    noise = report.noise
    floor = (
        f'<p class="note">Noise floor of the original: losses {num(noise.loss)}, parameters '
        f"{num(noise.param_rel)} (relative norm). Two identical runs: "
        f"{'bitwise equal' if noise.deterministic else 'differ'}.</p>"
        if noise
        else ""
    )
    return (
        '<h2 id="verdicts">Verdicts</h2><div class="tablewrap"><table class="verdicts"><tr>'
        "<th>place</th>"
        "<th>fix</th><th>fix is</th><th>class</th>"
        "<th>verdict</th><th>max loss diff</th><th>max param diff</th><th>speed</th></tr>"
        + "".join(rows)
        + "</table></div>"
        + floor
        + _unfixed(report)
    )


def _unfixed(report: Report) -> str:
    if not report.unfixed:
        return ""
    items = "".join(
        f"<li><b>{escape(u.code)}</b> line {u.row}: {md(u.why)}"
        f'<div class="why">{md(u.message)}</div></li>'
        for u in report.unfixed
    )
    return f"<h2>Findings without an applied fix</h2><ul>{items}</ul>"


def _run(report: Report, name: str) -> RunSeries | None:
    return next((r for r in report.runs if r.name == name and r.losses), None)


def _curves(report: Report) -> str:
    original = _run(report, "original")
    fixed = _run(report, "fixed")
    if original is None or fixed is None:
        return ""
    n = max(len(original.losses), len(fixed.losses))
    band = None
    noise = report.noise_series
    if noise:
        base = original.losses[: len(noise)]
        band = Band(
            "noise band: original ± its own run-to-run difference",
            [v - d for v, d in zip(base, noise)],
            [v + d for v, d in zip(base, noise)],
            NOISE,
        )
    lines = [
        Line("original", original.losses, ORIGINAL, 3.0),
        Line("fixed (every fix)", fixed.losses, FIXED, 1.6, dash="6 4"),
    ]
    equal = original.losses == fixed.losses
    spread = max(original.losses) - min(original.losses) if original.losses else 0.0
    notes = []
    if equal:
        notes.append("The two runs are bitwise equal: the lines coincide.")
    if noise and spread and max(noise) < 0.005 * spread:
        notes.append(
            f"The noise band is up to {num(max(noise))} wide, too narrow to see at this scale: "
            "the per-step difference below shows it."
        )
    loss_chart = line_chart(
        Chart(
            "Loss per backward pass",
            "backward pass",
            "loss",
            lines,
            band,
            note=" ".join(notes),
        )
    )
    differences: list[float | None] = [abs(a - b) for a, b in zip(original.losses, fixed.losses)]
    positive = [d for d in differences if d] + [d for d in noise if d]
    # zero (bitwise equal) sits on the chart's bottom line, a decade below the smallest
    floor = 10 ** (math.floor(math.log10(min(positive))) - 1) if positive else 1e-12
    diff_lines = [
        Line(
            "|fixed - original|",
            [max(d, floor) if d is not None else None for d in differences],
            FIXED,
            1.8,
            markers=True,
        )
    ]
    if noise:
        diff_lines.append(
            Line("noise floor: |perturbed - original|", [max(d, floor) for d in noise], NOISE, 1.5)
        )
    zeros = sum(1 for d in differences if d == 0)
    quiet = sum(1 for d in noise if d == 0)
    notes = []
    if zeros:
        notes.append(f"{zeros} of {n} passes are bitwise equal (hollow points on the bottom line).")
    if quiet:
        notes.append(
            f"The perturbed run matched the original exactly on {quiet} passes (no gray point)."
        )
    diff_chart = line_chart(
        Chart(
            "Per-step loss difference (log scale)",
            "backward pass",
            "absolute difference",
            diff_lines,
            log=True,
            floor=floor,
            height=240,
            note=" ".join(notes),
        )
    )
    return f'<h2 id="equivalence">Equivalence</h2>{loss_chart}{diff_chart}'


def _speed(report: Report) -> str:
    timing = report.timing
    if timing is None:
        return ""
    original = timing.original
    sides = [("original", original, None)] + [(v.name, v.side, v) for v in timing.variants]
    speed_bars = []
    memory_bars = []
    for name, side, variant in sides:
        summary = side.summary()
        color = ORIGINAL
        text = f"{summary['median']:.1f} steps/s"
        if side.samples_per_s and variant is None:
            text += f", {side.samples_per_s:,.0f} samples/s"
        if variant is not None:
            color = LABEL_COLOR.get(variant.speed.label, NEUTRAL)
            speed = variant.speed
            text += f" · {speed.ratio:.2f}x"
            if speed.low is not None and speed.high is not None:
                text += f" (95% {speed.low:.2f}-{speed.high:.2f}x, noise {speed.noise:.0%})"
            text += f" {speed.label}"
        speed_bars.append(Bar(name, summary["median"], summary["min"], summary["max"], color, text))
        memory = side.peak_memory_bytes
        if memory:
            device = side.device_peak_bytes
            extra = f" (device {device / 2**20:,.0f} MiB)" if device else ""
            color, words = ORIGINAL, ""
            if variant is not None:
                color, words = memory_change(original, side)
            memory_bars.append(
                Bar(
                    name,
                    memory / 2**20,
                    color=color,
                    text=f"{memory / 2**20:,.0f} MiB{extra}{words}",
                )
            )
    absent = "".join(
        f"<li><b>{escape(code)}</b>: {NOT_APPLICABLE}: {md(why)}</li>"
        for code, why in timing.not_applicable.items()
    )
    causes = "".join(
        f"<li><b>{escape(v.name)}</b>: likely cause of the slowdown: {md(v.cause)}</li>"
        for v in timing.variants
        if v.cause
    ) + "".join(
        f"<li><b>{escape(v.name)}</b>: {md(n)}</li>" for v in timing.variants for n in v.notes
    )
    notes = "".join(f"<li>{md(n)}</li>" for n in timing.notes)
    return (
        '<h2 id="speed">Speed and memory per fix</h2>'
        '<p class="note">Steady-state optimizer steps per second after the warm-up, median over '
        "the timing runs (whiskers: fastest and slowest run); each rule's fixes are timed alone "
        "and all together, alternating with the original. Bars: "
        f'<b style="color:{ORIGINAL}">original</b>, <b style="color:{LABEL_COLOR[FASTER]}">'
        f'faster</b>, <b style="color:{LABEL_COLOR[SLOWER]}">slower</b>, '
        f'<b style="color:{NEUTRAL}">no measurable change</b>; the text after each bar gives '
        "the ratio to the original, its 95% bootstrap interval and the A-vs-A noise (the "
        "original's own spread between its runs) that the interval must clear.</p>"
        + bar_chart("Steps per second", speed_bars, "median, min-max")
        + '<p class="note">Memory is judged on its own: '
        f'<b style="color:{MORE_MEMORY}">more memory</b> (over {MEMORY_CHANGE:g}x the '
        f'original\'s peak), <b style="color:{LESS_MEMORY}">less memory</b> (under '
        f'1/{MEMORY_CHANGE:g}), <b style="color:{NEUTRAL}">no marked change</b>.</p>'
        + bar_chart("Peak memory", memory_bars, "MiB, the process and its DataLoader workers")
        + (f"<ul>{absent}{causes}{notes}</ul>" if absent or causes or notes else "")
    )


def memory_change(original: Side, side: Side) -> tuple[str, str]:
    """The colour and words of a variant's peak memory against the original's."""
    before, after = original.peak_memory_bytes, side.peak_memory_bytes
    if not before or not after:
        return NEUTRAL, ""
    ratio = after / before
    if ratio > MEMORY_CHANGE:
        return MORE_MEMORY, f" · {ratio:.2f}x more memory"
    if ratio < 1 / MEMORY_CHANGE:
        return LESS_MEMORY, f" · {ratio:.2f}x less memory"
    return NEUTRAL, f" · {ratio:.2f}x"


def _opinion(report: Report) -> str:
    opinion = report.opinion
    if opinion is None:
        return ""
    style = {"seen": "seen", "not seen": "notseen"}
    rows = "".join(
        f"<tr><td><b>{escape(c.code)}</b> {escape(c.name)}</td><td>line {c.row}</td>"
        f'<td class="{style.get(c.status, "na")}">{escape(c.status)}</td>'
        f"<td>{md(c.detail)}</td></tr>"
        for c in opinion.findings
    )
    extra = "".join(
        f"<tr><td><b>{escape(f.code or '(no rule yet)')}</b> {escape(f.name)}</td>"
        f"<td>{escape(f.file)}{f':{f.row}' if f.row is not None else ''}</td>"
        f'<td class="seen">runtime only</td><td>{md(f.detail)}</td></tr>'
        for f in opinion.runtime_only
    )
    patterns = "".join(
        f"<tr><td><code>{escape(p['name'])}</code></td><td>{escape(p['shows'])}</td>"
        f"<td>{escape(p['status'])}</td><td>"
        + (
            escape(", ".join(f"line {h['row']}" for h in p["hits"]) or "no hit")
            if p["status"] == "ran"
            else escape(p["reason"] or "")
        )
        + "</td></tr>"
        for p in opinion.patterns
    )
    configuration = "".join(f"<li>{escape(line)}</li>" for line in opinion.configuration)
    problem = f'<p class="summary warn">{escape(opinion.problem)}</p>' if opinion.problem else ""
    return (
        '<h2 id="runtime">Runtime second opinion</h2>'
        f'<p class="note">A probe run of the original ({opinion.steps} steps on '
        f"{escape(opinion.device)}) recorded what the script really does.</p>{problem}"
        '<div class="tablewrap"><table><tr><th>finding</th><th>where</th><th>at run time</th>'
        f"<th>what was seen</th></tr>{rows}{extra}</table></div>"
        + (
            "<h3>torch's profiler pattern matcher</h3><table><tr><th>pattern</th><th>shows</th>"
            f"<th>status</th><th>hits</th></tr>{patterns}</table>"
            if patterns
            else ""
        )
        + (f"<h3>Configuration</h3><ul>{configuration}</ul>" if configuration else "")
    )


def _notes(report: Report) -> str:
    notes = [*report.notes, *([report.combined_fails] if report.combined_fails else [])]
    if not notes:
        return ""
    return "<h2>Notes</h2><ul>" + "".join(f"<li>{md(n)}</li>" for n in notes) + "</ul>"
