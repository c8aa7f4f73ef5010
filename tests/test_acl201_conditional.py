"""ACL201 on a norm that follows the conv only under `if batch_norm:` (issue 24):
the fixed snapshot of tests/cases/ACL201_conditional_bn.py, run with real torch,
keeps a conv's bias exactly where no batch or instance norm follows it, for
either value of each flag; a test the constructor cannot read gets a reason."""

from __future__ import annotations

from typing import Any

import pytest
import torch.nn as nn

from tests.support import ROOT, lint_messages, settings_for, strip_markers

CASE = ROOT / "tests" / "cases" / "ACL201_conditional_bn"
NORMS = (nn.BatchNorm2d, nn.InstanceNorm2d)


def _fixed() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    source = (CASE.parent / f"{CASE.name}.fixed.py").read_text(encoding="utf-8")
    exec(compile(source, "ACL201_conditional_bn.fixed.py", "exec"), namespace)
    return namespace


def _bias_matches_the_norm(model: nn.Module) -> list[tuple[bool, bool]]:
    """(has a bias, a norm follows) for every conv of each Sequential in `model`."""
    out = []
    for seq in model.modules():
        if isinstance(seq, nn.Sequential):
            layers = list(seq)
            for conv, after in zip(layers, [*layers[1:], None]):
                if isinstance(conv, nn.Conv2d):
                    out.append((conv.bias is not None, isinstance(after, NORMS)))
    return out


@pytest.mark.parametrize("flag", [True, False])
def test_the_fixed_builders_drop_the_bias_exactly_before_a_norm(flag: bool) -> None:
    ns = _fixed()
    built = [
        ns["vgg_layers"]([8, "M", 16], batch_norm=flag),
        ns["UNetDown"](3, 8, normalize=flag),
        ns["plain_unless_asked"]([3, 8, 16], plain=flag),
    ]
    regressor = _bias_matches_the_norm(ns["Regressor"](3, 8, use_bn=flag))
    # the first conv keeps its bias without the norm; the others always meet one
    assert regressor == [(not flag, flag), (False, True)] + ([(False, True)] if flag else [])
    for model in built:
        pairs = _bias_matches_the_norm(model)
        assert pairs and all(bias != normed for bias, normed in pairs), pairs
    # a group norm on the other branch does not cancel the bias: it stays there
    group = _bias_matches_the_norm(ns["batch_or_group_norm"]([8, 16, 16], bn=flag))
    assert group == [(not flag, flag)] * 2
    both = _bias_matches_the_norm(ns["norm_on_both_branches"]([3, 8], slow_bn=flag))
    assert both == [(False, True)]


def test_a_test_the_constructor_cannot_read_gets_a_reason() -> None:
    text, _ = strip_markers((CASE.parent / f"{CASE.name}.py").read_text(encoding="utf-8"))
    reasons = {
        row: message.partition(" (no fix: ")[2]
        for row, _, message in lint_messages(text, settings_for(("ACL201",)))
    }
    assert reasons[82] == (
        'the test `opts.get("bn")` is not a name, an attribute or a comparison of them '
        "that the conv's constructor could read the same)"
    )
    assert reasons[158] == (
        'the test `opts["bn"]` is not a name, an attribute or a comparison of them '
        "that the conv's constructor could read the same)"
    )
    assert [row for row, reason in reasons.items() if reason] == [82, 158]
