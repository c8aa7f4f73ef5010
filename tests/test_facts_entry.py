"""`facts.entry`: the `__main__` guard and which calls run when the script is imported."""

from __future__ import annotations

import textwrap

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.entry import Entry
from accel_lint.facts.syntax import is_main_test
from accel_lint.walk import walk


def _facts(source: str) -> FileFacts:
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    return facts


def _at_import(source: str) -> dict[str, bool]:
    """`runs_at_import` of every `load(...)` call, by its first argument's name."""
    facts = _facts(source)
    entry = Entry.of(facts)
    out: dict[str, bool] = {}
    for site in facts.calls:
        func = site.node.func
        if isinstance(func, cst.Name) and func.value == "load":
            arg = site.node.args[0].value
            assert isinstance(arg, cst.Name)
            out[arg.value] = entry.runs_at_import(site)
    return out


def test_main_guard_either_way_round() -> None:
    for test in ('__name__ == "__main__"', "'__main__' == __name__"):
        stmt = cst.parse_statement(f"if {test}:\n    pass\n")
        assert isinstance(stmt, cst.If) and is_main_test(stmt.test)
    stmt = cst.parse_statement('if __name__ != "__main__":\n    pass\n')
    assert isinstance(stmt, cst.If) and not is_main_test(stmt.test)


def test_unguarded_script_runs_module_code_and_what_it_calls_at_import() -> None:
    facts = _facts(
        """
        def helper():
            load(called)

        def deeper():
            helper()

        def unused():
            load(never_called)

        class Builder:
            def __init__(self):
                load(in_init)

        if flag:
            load(module_if)
        deeper()
        Builder()
        """
    )
    assert not Entry.of(facts).has_main_guard
    got = _at_import(facts.module.code)
    assert got == {
        "called": True,
        "never_called": False,
        "in_init": True,
        "module_if": True,
    }


def test_guarded_script_runs_only_what_is_outside_the_guard() -> None:
    got = _at_import(
        """
        def main():
            load(in_main)

        load(at_top)

        if __name__ == "__main__":
            load(in_guard)
            main()
        else:
            load(imported_only)
        """
    )
    assert got == {"in_main": False, "at_top": True, "in_guard": False, "imported_only": True}


def test_recursion_ends() -> None:
    got = _at_import(
        """
        def a():
            load(x)
            b()

        def b():
            a()
        """
    )
    assert got == {"x": False}
