"""ACL106 workers-on-in-memory-data: a DataLoader with worker processes over data that
is already in memory and needs no per-item work. Page: rules/ACL106.md

"In memory" is `facts.datasets.tensors_in_memory`: a `TensorDataset`, a tensor or an
array, a `Subset` of one, or an instance of a `Dataset` class of the file whose
`__getitem__` only indexes tensors or arrays held as attributes. A `collate_fn` does
per-batch work in the workers: such a loader is not reported.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for, remove_args, set_keyword
from accel_lint.facts import CallSite, int_value
from accel_lint.facts.datasets import tensors_in_memory
from accel_lint.facts.loader_args import POSITION, passed
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import DATALOADER

# what only worker processes use: with `num_workers=0` DataLoader refuses the first
# three (ValueError) and never calls the last
_WORKER_ONLY = (
    "persistent_workers",
    "prefetch_factor",
    "multiprocessing_context",
    "worker_init_fn",
)


class WorkersOnInMemoryData(Rule):
    code = "ACL106"
    name = "workers-on-in-memory-data"
    summary = "DataLoader worker processes over tensors already in memory (num_workers=0 is faster)"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.EXACT)

    def finish(self) -> None:
        for site in self.facts.calls_resolving_to(DATALOADER):
            count = self._workers(site)
            if count is None:
                continue
            call, scope = site.node, site.scope
            dataset = passed(call, "dataset", self.facts, scope)
            if dataset.value is None or not tensors_in_memory(self.facts, dataset.value, scope):
                continue
            collate = passed(call, "collate_fn", self.facts, scope)
            if not collate.known or not (
                collate.absent or code_for(collate.value or cst.Name("None")) == "None"
            ):
                continue  # a collate function works on each batch in the workers
            message = (
                f"DataLoader starts {count} worker process(es) over `{code_for(dataset.value)}`, "
                "data already in memory: the workers only index tensors the training process "
                "holds and send each batch back through shared memory, which is slower than "
                "indexing them in the training process (`num_workers=0`)"
            )
            self._report(site, message)

    def _workers(self, site: CallSite) -> int | None:
        """`num_workers` as a number > 0 written in the file (not a command-line option,
        whose value the user picks)."""
        got = passed(site.node, "num_workers", self.facts, site.scope)
        if got.absent or not got.known or got.conditional or got.value is None:
            return None
        if self.facts.argparse_option_for(got.value) is not None:
            return None
        value = self.facts.literal_value(got.value, site.scope)
        if isinstance(value, cst.Name):
            return None  # True, or a name of unknown value
        count = int_value(value)
        return count if count is not None and count > 0 else None

    def _report(self, site: CallSite, message: str) -> None:
        call = site.node
        workers = passed(call, "num_workers", self.facts, site.scope)
        if workers.arg is None:
            reason = "`num_workers` comes from a `**kwargs` dict; set it to 0 there"
            self.report(call, message, no_fix_reason=reason)
            return
        for name in _WORKER_ONLY:
            got = passed(call, name, self.facts, site.scope)
            if got.absent:
                continue
            if got.arg is None or got.arg.keyword is None:
                reason = f"`{name}` is passed {'positionally' if got.arg else 'in a **kwargs dict'}"
                self.report(call, message, no_fix_reason=reason + "; drop it with the workers")
                return
        new = remove_args(call, _WORKER_ONLY)
        if workers.arg.keyword is None:
            args = list(new.args)
            index = next(i for i, a in enumerate(call.args) if a is workers.arg)
            assert index == POSITION["num_workers"] or index < len(args)
            args[index] = args[index].with_changes(value=cst.Integer("0"))
            new = new.with_changes(args=args)
        else:
            new = set_keyword(new, "num_workers", "0")
        dropped = [n for n in _WORKER_ONLY if not passed(call, n, self.facts, site.scope).absent]
        text = "Load in the training process: `num_workers=0`"
        if dropped:
            text += " (dropping " + ", ".join(f"`{n}`" for n in dropped) + ")"
        self.report(call, message, Fix(text, {call: new}))
