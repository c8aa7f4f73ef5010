"""ACL207 (choose a float32 matmul precision) and ACL313 (the legacy TF32 switches)
cover the same settings: on one script at most one of them reports, their fixes
never leave both TF32 APIs in a file, and a second pass changes nothing."""

from __future__ import annotations

import textwrap

import pytest

from tests.support import fix, lint, settings_for

_TRAIN = """
model = nn.Linear(512, 512).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(10):
    model(torch.randn(64, 512).cuda()).pow(2).mean().backward()
    opt.step()
"""


def _script(settings: str) -> str:
    return "import torch\nimport torch.nn as nn\n\n" + textwrap.dedent(settings) + _TRAIN


@pytest.mark.parametrize("target", ["2.13", None])
@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ("", {"ACL207"}),  # nothing chosen: ACL207 adds the setting
        ("torch.backends.cuda.matmul.allow_tf32 = False\n", {"ACL313"}),
        ("torch.backends.cuda.matmul.allow_tf32 = True\n", {"ACL313"}),
        ("torch.backends.cudnn.allow_tf32 = True\n", {"ACL313"}),
        (
            """
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cuda.matmul.fp32_precision = "tf32"
            """,
            {"ACL313"},
        ),
        ('torch.backends.cuda.matmul.fp32_precision = "tf32"\n', set()),
        ('torch.set_float32_matmul_precision("high")\n', set()),
    ],
)
def test_one_rule_per_script_and_the_fixes_agree(
    settings: str, expected: set[str], target: str | None
) -> None:
    both = settings_for(("ACL207", "ACL313"), target_torch=target, unsafe=True)
    source = _script(settings)
    found = {code for _, code in lint(source, both)}
    if target is not None:
        assert found == expected
    else:  # ACL313 leaves the latest torch to the file's own choice
        assert found <= expected
    assert found != {"ACL207", "ACL313"}
    fixed = fix(source, both)
    assert fix(fixed, both) == fixed, "a second pass changed the file"
    assert "ACL207" not in {code for _, code in lint(fixed, both)}
    # never both APIs written by the fixes: set_float32_matmul_precision shares the
    # legacy state, so it must not meet an `fp32_precision` the fix wrote
    if "set_float32_matmul_precision" in fixed and "set_float32" not in source:
        assert "fp32_precision" not in fixed and "allow_tf32" not in fixed
    if "fp32_precision" in fixed and "fp32_precision" not in source:
        assert "set_float32_matmul_precision" not in fixed
