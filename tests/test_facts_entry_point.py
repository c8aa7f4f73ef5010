"""Where a process-wide setting goes (`facts.entry`) and how the file trains
(`facts.training`): the analyses ACL202 and ACL207 share."""

from __future__ import annotations

import textwrap

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.entry import Entry
from accel_lint.facts.syntax import is_main_test as is_main_guard
from accel_lint.facts.training import Training
from accel_lint.rewrite import apply_fixes_once
from accel_lint.rule import Fix
from accel_lint.walk import walk


def _facts(source: str) -> FileFacts:
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    return facts


def _inserted(source: str, module: str = "torch.backends.cudnn") -> str | None:
    """The file with `<module>.benchmark = True` inserted, or None with no place."""
    facts = _facts(source)
    insertion = Entry.of(facts).insertion(module, "{}.benchmark = True")
    if insertion is None:
        return None
    fix = Fix("", insertion.replacements, insertion.imports)
    return apply_fixes_once(facts.module, [fix])


def test_main_is_preferred_to_the_guard_and_its_docstring_and_imports_stay_first() -> None:
    fixed = _inserted(
        '''
        import torch


        def main():
            """Doc."""
            import os
            train()


        if __name__ == "__main__":
            main()
        '''
    )
    assert fixed is not None
    assert '"""Doc."""\n    import os\n    torch.backends.cudnn.benchmark = True\n' in fixed


def test_main_handed_over_counts_as_called() -> None:
    fixed = _inserted(
        """
        import fire
        import torch

        def main(lr=0.1):
            train(lr)

        fire.Fire(main)
        """
    )
    assert fixed is not None and "def main(lr=0.1):\n    torch.backends" in fixed


def test_a_guard_without_main_gets_it_first_and_a_one_line_guard_becomes_a_block() -> None:
    fixed = _inserted(
        """
        import torch
        from launcher import run

        if __name__ == "__main__": run()
        """
    )
    assert fixed is not None
    assert fixed.endswith(
        'if __name__ == "__main__":\n    torch.backends.cudnn.benchmark = True\n    run()\n'
    )


def test_spawned_workers_get_it_when_one_trains() -> None:
    fixed = _inserted(
        """
        import torch
        import torch.multiprocessing as mp

        def worker(rank):
            loss = model(rank)
            loss.backward()

        def main():
            mp.spawn(worker, nprocs=2)

        if __name__ == "__main__":
            main()
        """
    )
    assert fixed is not None
    assert "def worker(rank):\n    torch.backends.cudnn.benchmark = True\n" in fixed
    assert "def main():\n    mp.spawn" in fixed


def test_a_launcher_whose_target_is_not_in_the_file_leaves_no_place() -> None:
    facts = _facts(
        """
        import torch.multiprocessing as mp
        from workers import run

        def main():
            mp.spawn(run, nprocs=2)
        """
    )
    entry = Entry.of(facts)
    assert entry.places == []
    assert entry.reason is not None and "does not define" in entry.reason


def test_a_script_gets_it_after_the_imports_that_bind_the_module() -> None:
    fixed = _inserted(
        """
        import sys
        sys.path.insert(0, "..")
        import torch.backends.cudnn as cudnn
        from models import Net

        model = Net()
        model(x).sum().backward()
        """
    )
    assert fixed is not None
    assert "from models import Net\n\ncudnn.benchmark = True\n\nmodel = Net()" in fixed


def test_training_through_a_function_called_at_module_level_is_a_script() -> None:
    facts = _facts(
        """
        import torch

        def train():
            loss.backward()

        train()

        if __name__ == "__main__":
            print("done")
        """
    )
    training = Training.of(facts)
    assert training.trains_at_module_level(outside=Entry.of(facts).main_guard)
    assert Entry.of(facts).places[0].where == "after the imports"


def test_a_library_has_no_entry_point() -> None:
    facts = _facts(
        """
        import torch

        class Trainer:
            def step(self, loss):
                loss.backward()
        """
    )
    entry = Entry.of(facts)
    assert entry.insertion("torch.backends.cudnn", "{}.benchmark = True") is None
    assert entry.reason is not None and "no entry point" in entry.reason


def test_the_module_is_imported_when_the_file_lacks_it() -> None:
    facts = _facts(
        """
        from torch import nn

        if __name__ == "__main__":
            nn.Linear(2, 2)
        """
    )
    insertion = Entry.of(facts).insertion("torch", '{}.set_float32_matmul_precision("high")')
    assert insertion is not None
    assert insertion.imports == ("import torch",)
    assert insertion.code == 'torch.set_float32_matmul_precision("high")'


def test_a_shadowed_module_name_leaves_no_fix() -> None:
    facts = _facts(
        """
        import torch

        def main(torch):
            torch.step()

        if __name__ == "__main__":
            main(None)
        """
    )
    assert Entry.of(facts).insertion("torch.backends.cudnn", "{}.benchmark = True") is None


def test_main_guard_test() -> None:
    assert is_main_guard(cst.parse_expression('__name__ == "__main__"'))
    assert is_main_guard(cst.parse_expression("'__main__' == __name__"))
    assert not is_main_guard(cst.parse_expression('__name__ != "__main__"'))


def test_optimizer_steps_leave_out_schedulers_and_environments() -> None:
    facts = _facts(
        """
        import torch

        sgd = torch.optim.SGD(params, lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(sgd, 10)
        env.step(action)
        sched.step()
        optimizer_g.step()
        sgd.step()
        scaler.step(sgd)
        """
    )
    steps = Training.of(facts).optimizer_steps()
    shown = [cst.Module([]).code_for_node(s.node) for s in steps]
    assert shown == ["optimizer_g.step()", "sgd.step()", "scaler.step(sgd)"]


def test_backward_passes_and_what_runs_them() -> None:
    facts = _facts(
        """
        import torch

        def inner(loss):
            loss.backward()

        def outer(loss):
            inner(loss)

        outer(x)
        torch.autograd.backward([x])
        """
    )
    training = Training.of(facts)
    assert training.trains
    assert len(training.backward_sites) == 2
    module_level = training.module_level_sites()
    assert [training.runs_backward(s) for s in module_level] == [True, True]


def test_facts_list_attribute_names_and_every_binding() -> None:
    facts = _facts(
        """
        import torch

        def f():
            from apex import amp
            return hp.fp16_run
        """
    )
    assert "fp16_run" in set(facts.attribute_names())
    assert {b.name for b in facts.all_bindings()} >= {"torch", "f", "amp"}
