"""ACL303 debug-api-left-on: autograd's debugging aids (anomaly detection, the autograd
profiler, gradcheck) switched on in code that trains. Page: rules/ACL303.md

Not reported in tests (files named `test_*.py` / `*_test.py` or under `tests/`,
functions named `test_*`), in code that exists to check, profile or benchmark (a
function or file named so), behind a branch on a debug flag (an `if` on a name or
attribute that says `debug`, `anomaly`, `profile`, `check` or `verbose`, also when
every call site of the function is behind one), or when the call's own switch is not
literally on (`set_detect_anomaly(args.debug)`, `profile(enabled=args.profile)`).
The fix removes a `set_detect_anomaly(True)` statement; the other calls wrap code
whose removal is the author's call.
"""

from __future__ import annotations

import re

import libcst as cst

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import CallSite
from accel_lint.facts.statements import Statements
from accel_lint.facts.syntax import last_name, sub_expressions
from accel_lint.names import Scope, resolves_to
from accel_lint.purpose import CHECKING, is_test_or_check_file
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import AUTOGRAD_PROFILER, DETECT_ANOMALY, GRADCHECK, SET_DETECT_ANOMALY

# A name that says the code around it is for debugging.
_DEBUG_FLAG = re.compile(r"debug|anomal|profil|check|verbose", re.IGNORECASE)
_MAX_DEPTH = 3


class DebugApiLeftOn(Rule):
    code = "ACL303"
    name = "debug-api-left-on"
    summary = "Autograd anomaly detection, profiler or gradcheck left on outside tests"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.EXACT)

    def finish(self) -> None:
        if is_test_or_check_file(self.ctx.path):
            return
        for site in self.facts.calls:
            described = self._debug_call(site)
            if described is None or self._deliberate(site, 0):
                continue
            message, fixable = described
            if not fixable:
                self.report(
                    site.node,
                    message,
                    no_fix_reason="it wraps code; remove it or put it behind a debug flag",
                )
                continue
            fix = self._removal(site.node)
            if fix is None:
                self.report(
                    site.node,
                    message,
                    no_fix_reason=(
                        "it is not a statement of its own (a `with` item or part of an expression)"
                    ),
                )
            else:
                self.report(site.node, message, fix)

    def _debug_call(self, site: CallSite) -> tuple[str, bool] | None:
        """The message for a debugging aid that is certainly on, and whether the fix
        may remove it; None for anything else."""
        call = site.node
        func = call.func
        if resolves_to(func, site.scope, SET_DETECT_ANOMALY):
            if not _literally_on(call, ("mode",), positional=True):
                return None
            return (
                "`set_detect_anomaly(True)` makes autograd record a stack trace for every "
                "operation of the forward pass and check every gradient of the backward "
                "pass for NaN: every step runs several times slower",
                True,
            )
        if resolves_to(func, site.scope, DETECT_ANOMALY):
            return (
                "`detect_anomaly()` records a stack trace for every forward operation and "
                "checks every backward result for NaN: the code it wraps runs several "
                "times slower",
                False,
            )
        if resolves_to(func, site.scope, AUTOGRAD_PROFILER):
            if not _literally_on(call, ("enabled",), positional=False, absent=True):
                return None
            return (
                f"`{last_name(func)}` instruments every operator the code it wraps runs "
                "and keeps a record of each: a profiling aid left on slows every step",
                False,
            )
        if resolves_to(func, site.scope, GRADCHECK):
            return (
                f"`{last_name(func)}` compares every gradient with finite differences, "
                "in many extra forward passes: a test, not training code",
                False,
            )
        return None

    def _deliberate(self, site: CallSite, depth: int) -> bool:
        """Behind a debug flag, in a test or a checking function, here or at every
        call site of its function in the file."""
        if any(_says_debug(test) for test, _ in site.guards):
            return True
        func = site.function
        if func is None:
            return False
        if CHECKING.search(func.name.value):
            return True
        scope: Scope | None = site.scope
        while scope is not None:  # an enclosing def named so (a nested helper)
            node = scope.node
            if isinstance(node, cst.FunctionDef) and CHECKING.search(node.name.value):
                return True
            scope = scope.parent
        if depth >= _MAX_DEPTH:
            return False
        callers = CallGraph.of(self.facts).calls_to(func)
        return bool(callers) and all(self._deliberate(c, depth + 1) for c in callers)

    def _removal(self, call: cst.Call) -> Fix | None:
        removal = Statements.of(self.facts).removal(call)
        return Fix("Remove the call", removal) if removal is not None else None


def _literally_on(
    call: cst.Call, keywords: tuple[str, ...], *, positional: bool, absent: bool = False
) -> bool:
    """The switch is the literal `True` (or left to its default of on, with `absent`)."""
    for index, arg in enumerate(call.args):
        if arg.star:
            return False
        if (arg.keyword is None and positional and index == 0) or (
            arg.keyword is not None and arg.keyword.value in keywords
        ):
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return absent


def _says_debug(test: cst.BaseExpression) -> bool:
    for node in sub_expressions(test):
        name = last_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
        if name is not None and _DEBUG_FLAG.search(name):
            return True
        if isinstance(node, cst.SimpleString) and _DEBUG_FLAG.search(node.value):
            return True  # `os.environ.get("DEBUG")`, `cfg["profile"]`
    return False
