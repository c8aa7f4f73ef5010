"""The verifier's judgement, without processes: equivalence classes, the noise
floor, intended-change invariants, causes and exit codes (timing: test_verify_speed)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from accel_lint.rule import Equivalence, Verification
from accel_lint.verify import compare as cmp
from accel_lint.verify import invariants
from accel_lint.verify.report import FixItem, Problem, Report

# -- losses and tensors ----------------------------------------------------------------


def test_loss_diff_equal() -> None:
    diff = cmp.loss_diff([1.0, 0.5, 0.25], [1.0, 0.5, 0.25])
    assert diff.equal and diff.first is None and diff.max_abs == 0.0


def test_loss_diff_first_divergence_and_size() -> None:
    diff = cmp.loss_diff([1.0, 0.5, 0.25, 0.2], [1.0, 0.5, 0.3, 0.1])
    assert diff.first == 2
    assert diff.max_abs == pytest.approx(0.1)
    assert diff.max_rel == pytest.approx(0.5)  # 0.1 / 0.2
    assert diff.early_rel == pytest.approx(0.5)


def test_loss_diff_count_mismatch_is_a_difference() -> None:
    diff = cmp.loss_diff([1.0, 0.5], [1.0, 0.5, 0.4])
    assert not diff.equal and diff.first == 2 and diff.max_abs == 0.0


def test_loss_diff_nan_on_both_sides_is_equal_but_not_on_one() -> None:
    assert cmp.loss_diff([math.nan, 1.0], [math.nan, 1.0]).equal
    one_sided = cmp.loss_diff([1.0], [math.nan])
    assert one_sided.first == 0 and one_sided.max_abs == math.inf


def _row(
    name: str, kind: str = "param", equal: bool = True, max_abs: float = 0.0, rel: float = 0.0
) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "shape": True,
        "equal": equal,
        "max_abs": max_abs,
        "rel_norm": rel,
    }


def test_tensor_diff_summarises_one_kind() -> None:
    diff = {
        "tensors": [
            _row("Net.a.weight", equal=False, max_abs=0.5, rel=0.01),
            _row("Net.b.weight", equal=False, max_abs=0.1, rel=0.2),
            _row("Net.bn.running_mean", "buffer", equal=False, max_abs=3.0, rel=0.9),
            {
                "name": "Net.c.weight",
                "kind": "param",
                "shape": False,
                "equal": False,
                "max_abs": None,
                "rel_norm": None,
            },
        ],
        "missing": [["Net.a.bias", "param"], ["Net.gone", "buffer"]],
        "extra": [],
    }
    params = cmp.tensor_diff(diff, "param")
    assert params.compared == 3 and params.unequal == 3
    assert params.max_abs == 0.5
    assert (params.worst, params.worst_rel) == ("Net.b.weight", 0.2)
    assert params.shape_mismatch == ("Net.c.weight",)
    assert params.missing == ("Net.a.bias",)
    buffers = cmp.tensor_diff(diff, "buffer", exclude=["Net.bn.running_mean"])
    assert buffers.compared == 0 and buffers.missing == ("Net.gone",)


# -- exact ------------------------------------------------------------------------------


def test_exact_holds_only_when_bitwise() -> None:
    same = cmp.loss_diff([1.0, 0.9], [1.0, 0.9])
    verdict = cmp.judge_exact(same, cmp.TensorDiff(compared=4), cmp.TensorDiff())
    assert verdict.holds and verdict.max_loss_diff == 0.0 and verdict.reason is None
    assert verdict.notes == ["bitwise equal: 2 losses, 4 parameters, 0 buffers"]


def test_exact_fails_naming_the_first_pass_counted_from_one() -> None:
    loss = cmp.loss_diff([1.0, 0.9, 0.8, 0.7], [1.0, 0.9, 0.8, 0.7000001])
    verdict = cmp.judge_exact(loss, cmp.TensorDiff(), cmp.TensorDiff())
    assert verdict.verdict == cmp.FAILS
    assert verdict.reason is not None and "from backward pass 4 on" in verdict.reason


def test_exact_fails_on_parameters_even_with_equal_losses() -> None:
    params = cmp.TensorDiff(compared=2, unequal=1, max_abs=1e-8, worst="Net.w", worst_rel=1e-9)
    verdict = cmp.judge_exact(cmp.loss_diff([1.0], [1.0]), params, cmp.TensorDiff())
    assert verdict.verdict == cmp.FAILS and "Net.w" in (verdict.reason or "")


def test_exact_fails_when_the_step_count_differs() -> None:
    verdict = cmp.judge_exact(cmp.loss_diff([1.0, 0.9], [1.0]), cmp.TensorDiff(), cmp.TensorDiff())
    assert verdict.verdict == cmp.FAILS and "made 1 backward passes where the original made 2" in (
        verdict.reason or ""
    )


# -- close and the noise floor ------------------------------------------------------------


def _noise(loss: float = 1e-3, param: float = 1e-2) -> cmp.Noise:
    return cmp.Noise(loss=loss, early_rel=1e-6, param_rel=param, buffer_rel=param)


def test_close_holds_within_a_multiple_of_the_noise_floor() -> None:
    losses = [2.0, 1.5, 1.2, 1.1, 1.0, 0.9]
    loss = cmp.loss_diff(losses, [*losses[:5], 0.9 + 4e-3])
    params = cmp.TensorDiff(compared=2, unequal=2, max_abs=1e-3, worst="w", worst_rel=4e-2)
    verdict = cmp.judge_close(loss, params, cmp.TensorDiff(), _noise())
    assert verdict.holds, verdict.reason


def test_close_fails_beyond_the_noise_floor() -> None:
    loss = cmp.loss_diff([2.0, 1.5, 1.2, 1.1, 1.0, 0.9], [2.0, 1.5, 1.2, 1.1, 1.0, 0.8])
    verdict = cmp.judge_close(loss, cmp.TensorDiff(), cmp.TensorDiff(), _noise())
    assert verdict.verdict == cmp.FAILS
    assert "more than 5x the noise floor" in (verdict.reason or "")


def test_close_fails_when_the_first_steps_already_differ() -> None:
    # within the (large, chaotic) whole-run floor, but wrong from the first pass on
    loss = cmp.loss_diff([2.0, 1.5], [2.001, 1.5])
    verdict = cmp.judge_close(loss, cmp.TensorDiff(), cmp.TensorDiff(), _noise(loss=1.0))
    assert verdict.verdict == cmp.FAILS and "first 5 losses" in (verdict.reason or "")


def test_close_fails_on_a_parameter_beyond_the_floor() -> None:
    params = cmp.TensorDiff(
        compared=1, unequal=1, max_abs=0.3, worst="Net.head.weight", worst_rel=0.3
    )
    verdict = cmp.judge_close(cmp.loss_diff([1.0], [1.0]), params, cmp.TensorDiff(), _noise())
    assert verdict.verdict == cmp.FAILS and "Net.head.weight" in (verdict.reason or "")


def test_close_accepts_removed_parameters_only_after_alignment() -> None:
    params = cmp.TensorDiff(compared=4, missing=("Net.conv.bias",))
    loss = cmp.loss_diff([1.0], [1.0])
    assert cmp.judge_close(loss, params, cmp.TensorDiff(), _noise()).verdict == cmp.FAILS
    aligned = cmp.judge_close(loss, params, cmp.TensorDiff(), _noise(), aligned=True)
    assert aligned.holds
    assert any("1 removed (Net.conv.bias)" in note for note in aligned.notes)


def test_close_takes_the_floor_over_the_tensors_it_compares() -> None:
    # the conv bias (cancelled by BatchNorm) moves most under noise; the fix removes it
    noise = cmp.Noise(
        1e-3, 1e-6, 1.1, 0.0, param_rels={"Net.conv.bias": 1.1, "Net.conv.weight": 1e-3}
    )
    compared = cmp.TensorDiff(
        compared=1,
        unequal=1,
        worst="Net.conv.weight",
        worst_rel=0.5,
        rel_norms={"Net.conv.weight": 0.5},
    )
    loss = cmp.loss_diff([1.0], [1.0])
    verdict = cmp.judge_close(loss, compared, cmp.TensorDiff(), noise)
    assert verdict.verdict == cmp.FAILS and "noise floor (0.001)" in (verdict.reason or "")
    assert noise.floor("param", ["Net.conv.bias", "Net.conv.weight"]) == 1.1


def test_noise_floor_from_the_perturbed_run_when_deterministic() -> None:
    perturbed = cmp.loss_diff([1.0, 0.5], [1.0, 0.5001])
    params = cmp.TensorDiff(compared=1, unequal=1, max_abs=1e-4, worst="w", worst_rel=1e-3)
    noise = cmp.Noise.measure(
        perturbed, params, cmp.TensorDiff(), cmp.loss_diff([1.0, 0.5], [1.0, 0.5])
    )
    assert noise.deterministic and noise.loss == pytest.approx(1e-4) and noise.param_rel == 1e-3
    assert noise.param_worst == "w"


def test_noise_floor_grows_to_the_nondeterminism_of_two_identical_runs() -> None:
    perturbed = cmp.loss_diff([1.0, 0.5], [1.0, 0.5001])
    repeat = cmp.loss_diff([1.0, 0.5], [1.0, 0.52])
    noise = cmp.Noise.measure(perturbed, cmp.TensorDiff(), cmp.TensorDiff(), repeat)
    assert not noise.deterministic
    assert noise.loss == pytest.approx(0.02) and noise.nondeterminism == pytest.approx(0.02)


# -- statistical ------------------------------------------------------------------------


def test_window_mean_is_the_trailing_half() -> None:
    assert cmp.window_mean([9.0, 9.0, 1.0, 3.0]) == 2.0
    assert cmp.window_mean([]) is None


def test_statistical_holds_within_the_spread_across_seeds() -> None:
    # the probe's measurement: before 2.2887/2.2341/2.2382, after 2.2081/2.1936/2.2398
    verdict = cmp.judge_statistical([2.2887, 2.2341, 2.2382], [2.2081, 2.1936, 2.2398])
    assert verdict.holds, verdict.reason
    assert "z = " in verdict.notes[0]


def test_statistical_fails_far_outside_the_spread() -> None:
    verdict = cmp.judge_statistical([2.24, 2.23, 2.25], [1.50, 1.52, 1.49])
    assert verdict.verdict == cmp.FAILS and "standard deviations apart" in (verdict.reason or "")


def test_statistical_with_a_seed_independent_loss() -> None:
    assert cmp.judge_statistical([1.0, 1.0], [1.0]).holds
    assert cmp.judge_statistical([1.0, 1.0], [1.1]).verdict == cmp.FAILS


def test_statistical_needs_two_seeds_of_the_original() -> None:
    assert cmp.judge_statistical([1.0], [1.0]).verdict == cmp.NOT_VERIFIABLE


# -- intended changes ---------------------------------------------------------------------


def _sampler_record(orders: list[str], backward_at: list[int], rank: int = 0) -> dict[str, Any]:
    return {
        "rank": rank,
        "samplers": [
            {"sampler": 0, "epoch": 0, "step": b, "backward": b, "n": 8, "order": o}
            for o, b in zip(orders, backward_at)
        ],
    }


def test_reshuffle_invariant_holds() -> None:
    original = [_sampler_record(["A", "A", "A"], [0, 4, 8])]
    fixed = [_sampler_record(["A", "B", "C"], [0, 4, 8])]
    losses_a = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5]
    losses_b = [1.0, 0.9, 0.8, 0.7, 0.65, 0.55]  # epoch 0 (4 passes) equal, then different
    verdict = invariants.epoch_reshuffle(original, fixed, losses_a, losses_b)
    assert verdict.holds, verdict.reason
    assert verdict.notes == [
        "epoch 0 bitwise equal (4 backward passes); 2 later epoch(s) reshuffled",
        "the original repeated epoch 0's order",
    ]


def test_reshuffle_invariant_fails_when_an_epoch_repeats() -> None:
    verdict = invariants.epoch_reshuffle(
        [_sampler_record(["A", "A"], [0, 4])], [_sampler_record(["A", "A"], [0, 4])], [1.0], [1.0]
    )
    assert verdict.verdict == cmp.FAILS and "epoch 1 repeats" in (verdict.reason or "")


def test_reshuffle_invariant_fails_when_epoch_0_changes() -> None:
    verdict = invariants.epoch_reshuffle(
        [_sampler_record(["A", "A"], [0, 2])],
        [_sampler_record(["A", "B"], [0, 2])],
        [1.0, 0.9, 0.8],
        [1.0, 0.95, 0.8],
    )
    assert verdict.verdict == cmp.FAILS and "epoch 0 should be unchanged" in (verdict.reason or "")


def test_reshuffle_invariant_needs_a_second_epoch() -> None:
    verdict = invariants.epoch_reshuffle(
        [_sampler_record(["A"], [0])], [_sampler_record(["A"], [0])], [1.0], [1.0]
    )
    assert verdict.verdict == cmp.NOT_VERIFIABLE and "--steps" in (verdict.reason or "")


def _saves(rank: int, content: str, step: int = 4) -> dict[str, Any]:
    return {"rank": rank, "saves": [{"step": step, "path": "checkpoint.pt", "content": content}]}


def test_rank0_save_invariant_holds() -> None:
    verdict = invariants.rank0_save(
        [_saves(0, "c1"), _saves(1, "c1")], [_saves(0, "c1"), {"rank": 1}], [1.0], [1.0]
    )
    assert verdict.holds, verdict.reason
    assert "written once by rank 0" in verdict.notes[0]


def test_rank0_save_invariant_fails_when_every_rank_still_writes() -> None:
    verdict = invariants.rank0_save(
        [_saves(0, "c1"), _saves(1, "c1")], [_saves(0, "c1"), _saves(1, "c1")], [1.0], [1.0]
    )
    assert verdict.verdict == cmp.FAILS and "still written by ranks 0, 1" in (verdict.reason or "")


def test_rank0_save_invariant_fails_on_other_content() -> None:
    verdict = invariants.rank0_save([_saves(0, "c1")], [_saves(0, "c2")], [1.0], [1.0])
    assert verdict.verdict == cmp.FAILS and "other content" in (verdict.reason or "")


def test_rank0_save_invariant_needs_a_save_before_the_stop() -> None:
    verdict = invariants.rank0_save([{"rank": 0}], [{"rank": 0}], [1.0], [1.0])
    assert verdict.verdict == cmp.NOT_VERIFIABLE


# -- causes -------------------------------------------------------------------------------


def test_zero_grad_cause_names_the_parameters() -> None:
    grads = {
        "steps": 12,
        "none": {},
        "zero": {"Net.aux.weight": 8, "Net.aux.bias": 8},
        "first_zero": {"Net.aux.weight": 1, "Net.aux.bias": 1},
    }
    cause = cmp.zero_grad_cause(grads)
    assert cause is not None
    assert "2 parameter(s) had an all-zero gradient" in cause
    assert "Net.aux.bias: 8 of 12 steps, first at step 2" in cause
    assert "skips them" in cause
    assert cmp.zero_grad_cause({"steps": 12, "zero": {}}) is None


def test_init_and_first_pass_causes() -> None:
    assert "other initial weights (Net.w)" in (
        cmp.init_cause([{"aligned": False, "differs": ["Net.w"]}]) or ""
    )
    assert cmp.init_cause([{"aligned": True, "differs": []}]) is None
    first = cmp.loss_diff([1.0], [2.0])
    assert "first batch" in (cmp.first_pass_cause(first, [{"aligned": False, "differs": []}]) or "")


# -- exit codes ---------------------------------------------------------------------------


def _report(*verdicts: str) -> Report:
    exact = Equivalence.EXACT
    return Report(
        "train.py",
        20,
        3,
        [
            FixItem("ACL101", "m", exact, Verification(exact), verdict=cmp.Verdict(v))
            for v in verdicts
        ],
    )


@pytest.mark.parametrize(
    ("verdicts", "code"),
    [
        ((), 0),
        ((cmp.HOLDS, cmp.HOLDS), 0),
        ((cmp.HOLDS, cmp.FAILS), 1),
        ((cmp.HOLDS, cmp.NOT_VERIFIABLE), 2),
        ((cmp.FAILS, cmp.NOT_VERIFIABLE), 1),
    ],
)
def test_exit_codes(verdicts: tuple[str, ...], code: int) -> None:
    assert _report(*verdicts).exit_code == code


def test_a_failed_run_exits_2_even_when_a_fix_fails() -> None:
    report = _report(cmp.FAILS)
    report.problem = Problem("fixed", "crashed", "boom", "")
    assert report.exit_code == 2


def test_fixes_that_hold_alone_but_not_together_exit_1() -> None:
    report = _report(cmp.HOLDS, cmp.HOLDS)
    report.combined_fails = "the fixes hold one by one but not together"
    assert report.exit_code == 1
