"""ACL001 unused-noqa: a `# noqa: ACLnnn` that suppresses nothing, or names an ACL
code that does not exist. Page: rules/ACL001.md

The engine tells the rule, after the other rules' findings were filtered, which
codes each row's directive suppressed (`Rule.finish_suppressions`). Only our own
codes are judged: `E501` belongs to another tool, a bare `# noqa` may serve
flake8, and a code that is not enabled for the file (`--select`,
`per-file-ignores`) cannot be judged by this run. The safe fix takes the unused
codes out of the list, or removes the comment when nothing is left.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Union

import libcst as cst

from accel_lint.noqa import NOQA, OUR_CODE, Directive, without_codes
from accel_lint.rule import Equivalence, Fix, FixSafety, Replacement, Rule, Verification
from accel_lint.walk import all_children

_Holder = Union[cst.TrailingWhitespace, cst.EmptyLine]


class UnusedNoqa(Rule):
    code = "ACL001"
    name = "unused-noqa"
    summary = "`# noqa: ACLnnn` that suppresses nothing, or names an unknown ACL code"
    fix_safety = FixSafety.SAFE
    verification = Verification(Equivalence.EXACT)
    reads_suppressions = True

    def finish_suppressions(
        self,
        directives: Sequence[Directive],
        used: Mapping[int, Set[str]],
        enabled: frozenset[str],
        known: frozenset[str],
    ) -> None:
        if not any(d.codes for d in directives):
            return
        holders = _holders(self.ctx.module)
        if len(directives) != len(holders):
            return  # the tokens and the tree disagree: judge nothing
        for directive, holder in zip(directives, holders):
            if directive.codes is None:
                continue
            unused = [
                c
                for c in directive.codes
                if OUR_CODE.match(c)
                and c not in ("ACL000", self.code)
                and c in known
                and c in enabled
                and c not in used.get(directive.row, ())
            ]
            unknown = [
                c for c in directive.codes if OUR_CODE.match(c) and c not in known | {"ACL000"}
            ]
            if not unused and not unknown:
                continue
            parts = []
            if unused:
                parts.append("unused: " + ", ".join(f"`{c}`" for c in unused))
            if unknown:
                parts.append("unknown: " + ", ".join(f"`{c}`" for c in unknown))
            assert holder.comment is not None
            new = without_codes(holder.comment.value, [*unused, *unknown])
            self.report(
                holder.comment,
                f"Unused `noqa` directive ({'; '.join(parts)})",
                Fix(
                    "Remove the unused code" + ("s" if len(unused) + len(unknown) > 1 else "")
                    if new is not None
                    else "Remove the `noqa` comment",
                    {holder: _replacement(holder, new)},
                ),
            )


def _holders(module: cst.Module) -> list[_Holder]:
    """The comments carrying a noqa, in source order (the shared walk skips
    whitespace, where comments live, so this one reads them)."""
    out: list[_Holder] = []
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.TrailingWhitespace, cst.EmptyLine)):
            if node.comment is not None and NOQA.search(node.comment.value):
                out.append(node)
            continue
        stack.extend(reversed(all_children(node)))
    return out


def _replacement(holder: _Holder, comment: str | None) -> Replacement:
    if comment is not None:
        return holder.with_changes(comment=cst.Comment(comment))
    if isinstance(holder, cst.EmptyLine):
        return cst.RemovalSentinel.REMOVE
    return holder.with_changes(whitespace=cst.SimpleWhitespace(""), comment=None)
