"""Unit tests of `facts.evaluation`: evaluation functions are recognised by what they
do (a module called in a loop over data, plus `.eval()` or an evaluation name), never
by their name alone."""

from __future__ import annotations

import textwrap

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.evaluation import Evaluations
from accel_lint.walk import walk


def _evaluations(source: str) -> dict[str, list[str]]:
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    code = cst.Module([]).code_for_node
    return {
        found.function.name.value: [code(s.node.func) for s in found.module_calls]
        for found in Evaluations.of(facts).functions()
    }


def test_recognised_by_what_it_does() -> None:
    found = _evaluations(
        """
        import torch
        from torch.utils.data import DataLoader

        def validate(model, val_loader):
            for x, y in val_loader:
                out = model(x)

        def run(net, data):
            net.eval()
            for i, (x, y) in enumerate(tqdm(data.test_loader)):
                out = net.forward(x)

        def infer(encoder, dataset):
            for i in range(len(dataset)):
                encoder(dataset[i])

        def predict(classifier, ds):
            it = DataLoader(ds, batch_size=4)
            for batch in it:
                classifier(batch)

        def evaluate(model, data_loader, logger):
            for x, y in logger.log_every(data_loader, 10):
                model(x)

        def test_bar(model, val_loader):
            val_bar = tqdm(val_loader)
            for x in val_bar:
                model(x)
        """
    )
    assert found == {
        "validate": ["model"],
        "run": ["net.forward"],
        "infer": ["encoder"],
        "predict": ["classifier"],
        "evaluate": ["model"],
        "test_bar": ["model"],
    }


def test_not_evaluation() -> None:
    found = _evaluations(
        """
        import torch

        def test():
            net = ResNet18()
            y = net(torch.randn(2, 3, 32, 32))  # one forward, no loop over data

        def evaluate(model, val_loader):
            for x, y in val_loader:
                accuracy(x, y)  # no module called

        def train(model, loader):
            for x, y in loader:  # neither .eval() nor an evaluation name
                model(x)

        def validate(model, loader):
            for p in model.parameters():  # not a loop over data
                model(p)

        def evaluate_lr(schedule, loader):
            for x in loader:
                torch.relu(x)  # an import's function, not a module
        """
    )
    assert found == {}


def test_self_is_the_module() -> None:
    found = _evaluations(
        """
        import torch.nn as nn

        class Net(nn.Module):
            def evaluate(self, loader):
                self.eval()
                for x, y in loader:
                    self(x)
        """
    )
    assert found == {"evaluate": ["self"]}
