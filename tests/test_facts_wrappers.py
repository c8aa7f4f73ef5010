"""`Wrappers.wrap_state`: is a model expression wrapped in DistributedDataParallel or
DataParallel where it is read? YES only when certain (one unconditional wrap, after
every other binding, before the read); MAYBE on some paths; NO for the bare model.
`Wrappers.builders`: the calls that built what an expression holds."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from accel_lint.facts import CallSite, FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.facts.wrappers import Wrap, Wrappers
from accel_lint.torch_api import MODULE_WRAPPERS
from accel_lint.walk import walk


def _facts(source: str) -> FileFacts:
    module = cst.parse_module(textwrap.dedent(source))
    facts = FileFacts(module)
    walk(module, [FactsCollector(facts), ScopeCloser(facts)])
    facts.finish()
    return facts


def _state_at_save(source: str) -> Wrap:
    """The wrap state of the receiver of the (last) `.state_dict()` call."""
    facts = _facts(source)
    site: CallSite = facts.method_calls("state_dict")[-1]
    func = site.node.func
    assert isinstance(func, cst.Attribute)
    return Wrappers.of(facts).wrap_state(func.value, site.scope, MODULE_WRAPPERS, site.node)


HEADER = "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # wrapped once, unconditionally, then read
        ("model = Net()\nmodel = DDP(model)\nmodel.state_dict()", Wrap.YES),
        # a method that returns the module keeps the wrapper
        ("model = DDP(Net()).cuda()\nmodel.state_dict()", Wrap.YES),
        ("model = torch.nn.DataParallel(Net())\nnet = model\nnet.state_dict()", Wrap.YES),
        # read before the wrap
        ("model = Net()\nmodel.state_dict()\nmodel = DDP(model)", Wrap.NO),
        # wrapped on some runs
        ("model = Net()\nif distributed:\n    model = DDP(model)\nmodel.state_dict()", Wrap.MAYBE),
        ("model = DDP(Net()) if distributed else Net()\nmodel.state_dict()", Wrap.MAYBE),
        # rebound after the wrap
        ("model = DDP(Net())\nmodel = model.module\nmodel.state_dict()", Wrap.NO),
        # the unwrapping idioms
        ("model = DDP(Net())\nmodel.module.state_dict()", Wrap.NO),
        (
            "model = DDP(Net())\nbare = model.module if hasattr(model, 'module') else model\n"
            "bare.state_dict()",
            Wrap.NO,
        ),
        (
            "model = Net()\nif d:\n    model = DDP(model)\n    g = model.module\nelse:\n"
            "    g = model\ng.state_dict()",
            Wrap.NO,
        ),
        # `if __name__ == "__main__":` is the script itself, not a condition
        ("if __name__ == '__main__':\n    model = DDP(Net())\n    model.state_dict()", Wrap.YES),
    ],
)
def test_names(body: str, expected: Wrap) -> None:
    assert _state_at_save(HEADER + body) is expected


def test_a_parameter_takes_the_state_of_what_every_caller_passes() -> None:
    source = HEADER + textwrap.dedent(
        """
        def save(model):
            model.state_dict()

        def main():
            model = DDP(Net())
            save(model)
        """
    )
    assert _state_at_save(source) is Wrap.YES
    mixed = source + "\nsave(Net())\n"
    assert _state_at_save(mixed) is Wrap.MAYBE


def test_a_parameter_rebound_to_its_wrapper_is_wrapped() -> None:
    source = HEADER + textwrap.dedent(
        """
        def train(model):
            model = DDP(model)
            model.state_dict()
        """
    )
    assert _state_at_save(source) is Wrap.YES


def test_self_attributes_wrapped_in_init_are_certain_elsewhere_maybe() -> None:
    in_init = HEADER + textwrap.dedent(
        """
        class Trainer:
            def __init__(self, model):
                self.model = model.cuda()
                self.model = DDP(self.model)

            def save(self):
                self.model.state_dict()
        """
    )
    assert _state_at_save(in_init) is Wrap.YES
    in_setup = in_init.replace("def __init__(self, model):", "def setup(self, model):")
    assert _state_at_save(in_setup) is Wrap.MAYBE


def test_another_librarys_wrapper_is_not_torchs() -> None:
    source = "from mylib import DistributedDataParallel as DDP\nmodel = DDP(Net())\n"
    assert _state_at_save(source + "model.state_dict()") is Wrap.NO


def test_builders_follow_names_methods_and_parameters() -> None:
    facts = _facts(
        HEADER
        + textwrap.dedent(
            """
            def wrap(model):
                return DDP(model, device_ids=[0])

            def main():
                net = Net().cuda()
                if sync:
                    net = torch.nn.SyncBatchNorm.convert_sync_batchnorm(net)
                wrap(net)
            """
        )
    )
    (site,) = [s for s in facts.calls if cst.Module([]).code_for_node(s.node.func) == "DDP"]
    built = {
        cst.Module([]).code_for_node(call.func)
        for call, _ in Wrappers.of(facts).builders(site.node.args[0].value, site.scope)
    }
    assert built == {"Net().cuda", "Net", "torch.nn.SyncBatchNorm.convert_sync_batchnorm"}
