"""The runtime second opinion, judged in the parent: each static finding marked
seen or not seen at run time, and what the run showed that no static finding
names, with the rule it maps to.

Observations come from two runs of the original: the probe (its own hooks and
torch's profiler pattern matcher) and the reference equivalence run, whose
DataLoader records carry how long the training loop waited for data (the probe
is profiled, which would inflate that wait). An observation is named after the
rule that finds the same pattern in the source, so matching needs no table of
codes: a finding is seen when an observation of its rule's name was made at its
lines (or anywhere, for observations that have no line).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from accel_lint.verify.launch import RunResult
from accel_lint.verify.protocol import OBSERVABLE, ObservationRecord, Record
from accel_lint.verify.report import FindingCheck, Opinion, RuntimeFinding

# the share of a step spent waiting for data above which a loader is worth a word
# (the threshold torch's TensorBoard profiler plugin used for the same advice)
WAIT_WORTH_NOTING = 0.05
# observations torch's profiler makes alone are runtime findings only where the
# runner has no precise observer of its own (whose judgement is finer)
PRECISE = frozenset(
    {
        "dataloader-sync-loading",
        "dataloader-unpinned-memory",
        "conv-bias-before-norm",
        "zero-grad-keeps-tensors",
        "manual-zero-grad-loop",
        "foreach-disabled",
    }
)


@dataclass(frozen=True)
class StaticFinding:
    code: str
    name: str  # the rule's name: what an observation of the same pattern is called
    row: int
    end_row: int
    message: str


def second_opinion(
    findings: Sequence[StaticFinding],
    probe: RunResult | None,
    reference: RunResult,
    script: Path,
    code_of: Callable[[str], str | None],
) -> Opinion:
    device = reference.device
    runtime = probe.first.get("runtime") if probe is not None and probe.records else None
    cuda = bool(runtime and runtime["cuda"]) or device == "cuda"
    opinion = Opinion(steps=probe.steps if probe is not None else 0, device=device)
    if probe is None or not probe.ok or runtime is None:
        opinion.problem = (
            f"the probe run did not complete: {probe.message}" if probe else "no probe run"
        )
    observations = loader_observations(reference.first, device) if reference.records else []
    opinion.configuration = loader_lines(reference.first) if reference.records else []
    precise: list[ObservationRecord] = []
    from_patterns: list[ObservationRecord] = []
    if runtime is not None:
        precise = runtime["observations"]
        opinion.patterns = runtime["patterns"]
        opinion.configuration += runtime["configuration"]
        from_patterns = [
            {
                "kind": pattern["shows"],
                "file": hit["file"],
                "row": hit["row"],
                "detail": f"torch's profiler: {pattern['name']}",
                "notable": True,
            }
            for pattern in runtime["patterns"]
            for hit in pattern["hits"]
        ]
    observations += precise
    in_script = [o for o in observations if _in_script(o, script)]
    for finding in findings:
        opinion.findings.append(_check(finding, in_script, from_patterns, script, cuda))
    for observation in observations:
        if not _explained(observation, findings, script):
            opinion.runtime_only.append(_runtime_finding(observation, script, code_of))
    seen_kinds = {o["kind"] for o in observations}
    for observation in from_patterns:
        kind = observation["kind"]
        if kind in PRECISE or kind in seen_kinds or _explained(observation, findings, script):
            continue
        seen_kinds.add(kind)
        opinion.runtime_only.append(_runtime_finding(observation, script, code_of))
    return opinion


def _wait_fraction(record: Record, wait_s: float) -> float | None:
    times = record.get("step_times", [])
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    return wait_s / span if span > 0 else None


def loader_lines(record: Record) -> list[str]:
    """Each DataLoader as the script built it, and how long training waited on it."""
    lines = []
    for loader in record.get("loaders", []):
        fraction = _wait_fraction(record, loader["wait_s"]) if loader["trains"] else None
        use = (
            f"training waited for its batches {fraction:.0%} of each step"
            if fraction is not None
            else "not iterated by training before the stop"
        )
        lines.append(
            f"DataLoader line {loader['row']}: num_workers={loader['num_workers']}, "
            f"pin_memory={loader['pin_memory']}, persistent_workers="
            f"{loader['persistent_workers']}, batch_size={loader['batch_size']}, "
            f"{loader['dataset']}; {use}"
        )
    return lines


def loader_observations(record: Record, device: str) -> list[ObservationRecord]:
    """What the DataLoaders of the reference run show: workers, pinning, restarts,
    and how long the training loop waited for their batches."""
    found: list[ObservationRecord] = []
    for loader in record.get("loaders", []):
        file, row = loader["file"], loader["row"]
        fraction = _wait_fraction(record, loader["wait_s"]) if loader["trains"] else None
        use = (
            f"it fed training, and the loop waited for its batches {fraction:.0%} of each step"
            if fraction is not None
            else "it fed training"
            if loader["trains"]
            else "not iterated before the stop"
        )
        if loader["num_workers"] == 0:
            worth = (
                fraction is not None and fraction >= WAIT_WORTH_NOTING and not loader["in_memory"]
            )
            found.append(
                {
                    "file": file,
                    "row": row,
                    "kind": "dataloader-sync-loading",
                    "detail": f"num_workers=0: {use}",
                    "notable": worth,
                }
            )
        if not loader["pin_memory"]:
            where = "" if device == "cuda" else " (no accelerator here, so nothing is pinned)"
            found.append(
                {
                    "file": file,
                    "row": row,
                    "kind": "dataloader-unpinned-memory",
                    "detail": f"pin_memory=False{where}",
                    "notable": device == "cuda" and loader["trains"],
                }
            )
        if loader["num_workers"] > 0 and not loader["persistent_workers"] and loader["passes"] > 1:
            found.append(
                {
                    "file": file,
                    "row": row,
                    "kind": "workers-restarted-each-epoch",
                    "detail": f"{loader['num_workers']} workers started again for each of "
                    f"{loader['passes']} passes (persistent_workers=False)",
                    "notable": True,
                }
            )
    return found


def _in_script(observation: ObservationRecord, script: Path) -> bool:
    name = observation["file"]
    return name is None or _same_file(name, script)


def _same_file(name: str, script: Path) -> bool:
    parts = Path(name).parts
    return parts[-len(script.parts) :] == script.parts if len(parts) >= len(script.parts) else False


def _matches(observation: ObservationRecord, finding: StaticFinding) -> bool:
    if observation["kind"] != finding.name:
        return False
    row = observation["row"]
    return row is None or finding.row <= row <= finding.end_row


def _check(
    finding: StaticFinding,
    observations: Sequence[ObservationRecord],
    from_patterns: Sequence[ObservationRecord],
    script: Path,
    cuda: bool,
) -> FindingCheck:
    observable = OBSERVABLE.get(finding.name)
    if observable is None:
        return FindingCheck(
            finding.code, finding.name, finding.row, "not observable at run time", ""
        )
    if observable and not cuda:
        return FindingCheck(
            finding.code,
            finding.name,
            finding.row,
            "not observable at run time",
            "only on CUDA, and this run did not use it",
        )
    details = [o["detail"] for o in observations if _matches(o, finding)]
    patterns = sorted(
        {o["detail"] for o in from_patterns if o["kind"] == finding.name and _in_script(o, script)}
    )
    if details or patterns:
        return FindingCheck(
            finding.code, finding.name, finding.row, "seen", "; ".join(details + patterns)
        )
    return FindingCheck(finding.code, finding.name, finding.row, "not seen", "")


def _explained(
    observation: ObservationRecord, findings: Sequence[StaticFinding], script: Path
) -> bool:
    """A static finding names it, or it is not worth a word on its own."""
    if not observation["notable"]:
        return True
    if not _in_script(observation, script):
        return any(f.name == observation["kind"] for f in findings) and observation["row"] is None
    return any(_matches(observation, f) for f in findings)


def _runtime_finding(
    observation: ObservationRecord, script: Path, code_of: Callable[[str], str | None]
) -> RuntimeFinding:
    name = observation["file"]
    shown = str(script) if name is None or _same_file(name, script) else os.path.basename(name)
    return RuntimeFinding(
        code_of(observation["kind"]),
        observation["kind"],
        shown,
        observation["row"],
        observation["detail"],
    )
