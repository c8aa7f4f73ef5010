"""edits.set_keyword: replaces an existing keyword argument's value, else adds it."""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for, set_keyword


def _call(code: str) -> cst.Call:
    call = cst.parse_expression(code)
    assert isinstance(call, cst.Call)
    return call


def test_replaces_the_value_in_place() -> None:
    call = _call('add("--local_rank", default=-1, type=int)')
    fixed = set_keyword(call, "default", 'int(os.environ.get("LOCAL_RANK", -1))')
    assert (
        code_for(fixed)
        == 'add("--local_rank", default=int(os.environ.get("LOCAL_RANK", -1)), type=int)'
    )


def test_adds_the_keyword_when_missing() -> None:
    fixed = set_keyword(_call('add("--local_rank", type=int)'), "default", "0")
    assert code_for(fixed) == 'add("--local_rank", type=int, default=0)'
