"""ACL321 on a loss whose input is the output of a model of the file that ends in an
`nn.Sigmoid`: fixed (the layer dropped, the loss on logits) only where nothing else
needs the model's probabilities. The fixed snapshot is checked by `test_cases.py`;
here, the exact findings and each refusal's reason on tests/cases/ACL321_sigmoid_model.py.
"""

from __future__ import annotations

from tests.support import ROOT, lint_messages, settings_for, strip_markers

CASE = ROOT / "tests" / "cases" / "ACL321_sigmoid_model.py"


def _reasons() -> list[tuple[int, str | None]]:
    text, _ = strip_markers(CASE.read_text(encoding="utf-8"))
    out = []
    for row, code, message in lint_messages(text, settings_for(("ACL321",))):
        assert code == "ACL321"
        _, _, reason = message.partition(" (no fix: ")
        out.append((row, reason[:-1] if reason else None))
    return out


def test_refusals_name_where_the_probabilities_are_needed() -> None:
    model_elsewhere = (
        "the model's last layer is an `nn.Sigmoid`, but the model is used elsewhere too "
        "(called again, passed on, returned), where its probabilities may be needed"
    )
    assert _reasons() == [
        (55, None),  # a class whose nn.Sequential ends in nn.Sigmoid
        (57, None),  # through a name; forward's last call is a `self.` nn.Sigmoid
        (58, None),  # forward returns torch.sigmoid(...)
        (59, None),  # an nn.Sequential built in place
        (
            101,
            "the model's last layer is an `nn.Sigmoid`, but its output is used outside the "
            "loss too (a threshold, a metric, returned), where the probabilities are needed: "
            "drop the layer and apply `torch.sigmoid` there by hand",
        ),
        (114, model_elsewhere),  # called again for predictions
        (115, model_elsewhere),  # passed to a function
        (
            116,
            "the model's class `Tagger` ends in an `nn.Sigmoid`, but the class is used "
            "elsewhere too (built again, a base), where its probabilities may be needed",
        ),
        (
            117,
            "the model's class `Detector` ends in an `nn.Sigmoid`, but its own methods run "
            "it (`self(...)`, `.forward`), where its probabilities may be needed",
        ),
    ]
