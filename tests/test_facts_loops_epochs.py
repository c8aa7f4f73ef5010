"""`facts.loops`: an epoch loop over a name bound to a counter is named for epochs
through that binding (`train_iterator = trange(int(args.num_train_epochs))`)."""

from __future__ import annotations

import textwrap

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.loops import Loops
from accel_lint.walk import walk


def _loops(source: str) -> dict[str, tuple[bool, bool]]:
    """(is_epoch_loop, names_epochs) of each `for` loop, by its iterable's source."""
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    loops = Loops.of(facts)
    return {
        module.code_for_node(site.node.iter): (
            loops.is_epoch_loop(site.node),
            loops.names_epochs(site.node),
        )
        for site in loops.all()
        if isinstance(site.node, cst.For)
    }


def test_a_name_bound_to_a_counter_names_epochs_through_its_value() -> None:
    got = _loops(
        """
        from tqdm import trange

        def train(args, loader, model):
            train_iterator = trange(int(args.num_train_epochs), desc="Epoch")
            for _ in train_iterator:
                for batch in loader:
                    model(batch).backward()
            steps = range(args.max_steps)
            for _ in steps:
                pass
            rebound = range(3)
            rebound = range(args.epochs)
            for _ in rebound:
                pass
        """
    )
    assert got["train_iterator"] == (True, True)
    assert got["steps"] == (False, False)  # counts, but neither trains nor names epochs
    assert got["rebound"] == (False, False)  # bound twice: not followed
