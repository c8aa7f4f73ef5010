"""`verify --output-format json`: one object with every verdict, the timing of
each fix, the per-step series of every run and the runtime second opinion
(the keys are documented in docs/verifier.md, "JSON")."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from accel_lint.verify import compare as cmp
from accel_lint.verify.report import FixItem, Report, Timing, VariantTiming
from accel_lint.verify.timing import Side


def to_json(report: Report) -> dict[str, Any]:
    noise = report.noise
    return {
        "script": report.script,
        "device": report.device,
        "python": report.python,
        "torch": report.torch,
        "steps": report.steps,
        "steps_run": report.steps_run,
        "repeat": report.repeat,
        "command": report.command,
        "version": report.version,
        "fixes": [_fix(item) for item in report.fixes],
        "unfixed": [asdict(u) for u in report.unfixed],
        "timing": _timing(report.timing) if report.timing else None,
        "noise_floor": (
            {
                "loss": noise.loss,
                "param_rel": noise.param_rel,
                "buffer_rel": noise.buffer_rel,
                "deterministic": noise.deterministic,
                "series": report.noise_series,
            }
            if noise
            else None
        ),
        "runs": [asdict(run) for run in report.runs],
        "runtime": asdict(report.opinion) if report.opinion else None,
        "notes": [*report.notes, *([report.combined_fails] if report.combined_fails else [])],
        "error": asdict(report.problem) if report.problem else None,
        "refused_writes": [asdict(write) for write in report.refused_writes],
    }


def _fix(item: FixItem) -> dict[str, Any]:
    verdict = item.verdict
    speed = item.speed
    return {
        "code": item.code,
        "filename": item.filename,
        "row": item.row,
        "applicability": item.applicability,
        "class": item.equivalence.value,
        "verdict": verdict.verdict if verdict else cmp.NOT_VERIFIABLE,
        "reason": verdict.reason if verdict else "not run",
        "max_loss_diff": verdict.max_loss_diff if verdict else None,
        "max_param_diff": verdict.max_param_diff if verdict else None,
        "message": item.message,
        "notes": verdict.notes if verdict else [],
        "diff": item.diff,
        "speed": (
            {
                "label": speed.label,
                "reason": speed.reason,
                **(_variant(speed.variant) if speed.variant else {}),
            }
            if speed
            else None
        ),
    }


def _side(side: Side) -> dict[str, Any]:
    return {
        "steps_per_s": side.summary(),
        "samples_per_s": side.samples_per_s,
        "peak_memory_bytes": side.peak_memory_bytes,
        "peak_device_memory_bytes": side.device_peak_bytes,
        "first_step_s": side.first_step_s,
    }


def _variant(variant: VariantTiming) -> dict[str, Any]:
    speed = variant.speed
    return {
        "variant": variant.name,
        "codes": sorted(variant.codes),
        **_side(variant.side),
        "ratio": speed.ratio,
        "interval": [speed.low, speed.high] if speed.low is not None else None,
        "noise": speed.noise,
        "noise_measured": speed.noise_measured,
        "cause": variant.cause,
        "notes": variant.notes,
    }


def _timing(timing: Timing) -> dict[str, Any]:
    fixed = timing.fixed
    return {
        "original": _side(timing.original),
        "fixed": _side(fixed.side) if fixed else None,
        "speedup": fixed.speed.speedup if fixed else None,
        "ratio": fixed.speed.ratio if fixed else None,
        "ratio_interval": (
            [fixed.speed.low, fixed.speed.high] if fixed and fixed.speed.low is not None else None
        ),
        "noise": fixed.speed.noise if fixed else None,
        "label": fixed.speed.label if fixed else None,
        "variants": [{**_variant(v), "label": v.speed.label} for v in timing.variants],
        "not_applicable": timing.not_applicable,
        "notes": timing.notes,
    }
