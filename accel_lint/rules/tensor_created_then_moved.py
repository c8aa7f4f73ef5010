"""ACL203 tensor-created-then-moved: `torch.zeros(...).cuda()`, `torch.tensor(...).to(
device)`: a tensor built on the CPU, then copied to the accelerator. Page: rules/ACL203.md
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import add_keyword, code_for, set_keyword
from accel_lint.facts import string_value
from accel_lint.facts.devices import DeviceKind, Devices
from accel_lint.facts.file import CallSite
from accel_lint.names import qualified_names
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import DTYPE_EXACT_CREATORS, RANDOM_CREATORS, TENSOR_CREATORS
from accel_lint.walk import all_children

# Keywords of `.to()` / `.cuda()` the fix drops: nothing is copied any more.
_COPY_ONLY = frozenset({"non_blocking", "copy"})
# Creator arguments that a device argument conflicts with or changes the meaning of.
_CREATOR_BLOCKERS = {
    "out": "`out=` writes into an existing tensor",
    "requires_grad": (
        "with `requires_grad=True` the CPU tensor is the leaf and the moved one is not: "
        "creating it on the device changes which tensor gets gradients"
    ),
}


class TensorCreatedThenMoved(Rule):
    code = "ACL203"
    name = "tensor-created-then-moved"
    summary = "Tensor created on the CPU and then moved to the device (pass device= instead)"
    fix_safety = FixSafety.SAFE
    verification = Verification(
        Equivalence.EXACT,
        needs_accelerator="on the CPU the move is already a no-op: the copy saved is a "
        "host-to-device one",
    )

    def finish(self) -> None:
        for method in ("cuda", "to"):
            for site in self.facts.method_calls(method):
                func = site.node.func
                assert isinstance(func, cst.Attribute)
                creator = func.value
                if not isinstance(creator, cst.Call):
                    continue
                names = qualified_names(creator.func, site.scope)
                if not names or not names <= TENSOR_CREATORS:
                    continue
                self._check(site, creator, min(names), method)

    def _check(self, site: CallSite, creator: cst.Call, qualified: str, method: str) -> None:
        if _pinned(creator):
            return  # a pinned staging tensor, copied on purpose (asynchronously)
        move = site.node
        moved = _MoveArgs.of(move, method)
        if moved is None:
            return  # memory_format=, or arguments we cannot read
        devices = Devices.of(self.facts)
        device: cst.BaseExpression | None
        if method == "cuda":
            if moved.device is None:
                device = cst.SimpleString(_quoted("cuda", creator))
            elif isinstance(moved.device, cst.Integer):
                device = cst.SimpleString(_quoted(f"cuda:{moved.device.value}", creator))
            elif devices.certain_kind(moved.device, site.scope) is DeviceKind.ACCELERATOR:
                device = moved.device
            else:
                device = None  # `.cuda(args.gpu)`: None means the current device there
        else:
            if moved.device is None:
                return  # `.to(torch.float16)`, `.to(other)`: not a move to a device
            if devices.kind(moved.device, site.scope) is not DeviceKind.ACCELERATOR:
                return  # the CPU, or a device the file does not show to be an accelerator
            device = moved.device
        short = qualified.rsplit(".", 1)[1]
        message = (
            f"`torch.{short}(...)` builds the tensor on the CPU, then `.{method}()` copies it "
            "to the device: create it there with `device=`"
        )
        equivalence = Equivalence.STATISTICAL if qualified in RANDOM_CREATORS else None
        if device is None:
            assert moved.device is not None
            reason = (
                f"`.cuda({code_for(moved.device)})` may be given None (the current device), "
                "which `device=` would read as the CPU"
            )
            self.report(creator, message, no_fix_reason=reason, equivalence=equivalence)
            return
        blocker = _blocker(creator)
        if blocker is not None:
            self.report(creator, message, no_fix_reason=blocker, equivalence=equivalence)
            return
        new = (
            set_keyword(creator, "device", device)
            if _has_keyword(creator, "device")
            else (add_keyword(creator, "device", device))
        )
        result: cst.BaseExpression = new
        if moved.dtype is not None:
            if qualified in DTYPE_EXACT_CREATORS and not _has_keyword(creator, "dtype"):
                result = add_keyword(new, "dtype", moved.dtype)
            else:  # the conversion stays, now on the device: the same values
                result = cst.Call(
                    func=cst.Attribute(value=new, attr=cst.Name("to")),
                    args=[cst.Arg(value=moved.dtype)],
                )
        fix = Fix(f"Create the tensor with `device={code_for(device)}`", {move: result})
        self.report(creator, message, fix, equivalence=equivalence)


class _MoveArgs:
    """What a `.to(...)` / `.cuda(...)` call passes: the device, a dtype, and only
    arguments that creating on the device makes moot; None for anything else."""

    def __init__(self, device: cst.BaseExpression | None, dtype: cst.BaseExpression | None):
        self.device = device
        self.dtype = dtype

    @classmethod
    def of(cls, call: cst.Call, method: str) -> _MoveArgs | None:
        # Tensor.to(device=None, dtype=None, non_blocking=False, copy=False)
        # Tensor.cuda(device=None, non_blocking=False)
        slots = (
            ("device", "dtype", "non_blocking", "copy")
            if method == "to"
            else (
                "device",
                "non_blocking",
            )
        )
        found: dict[str, cst.BaseExpression] = {}
        position = 0
        for arg in call.args:
            if arg.star:
                return None
            if arg.keyword is None:
                if position >= len(slots):
                    return None
                found[slots[position]] = arg.value
                position += 1
            elif arg.keyword.value in slots:
                found[arg.keyword.value] = arg.value
            else:
                return None  # memory_format=: kept nowhere by the fix
        return cls(found.get("device"), found.get("dtype"))


def _blocker(creator: cst.Call) -> str | None:
    for arg in creator.args:
        if arg.star == "**":
            return "a `**kwargs` may already pass `device=`"
        if arg.keyword is not None and arg.keyword.value in _CREATOR_BLOCKERS:
            value = arg.value
            if isinstance(value, cst.Name) and value.value in ("False", "None"):
                continue
            return _CREATOR_BLOCKERS[arg.keyword.value]
    return None


def _pinned(creator: cst.Call) -> bool:
    """`torch.tensor(x, pin_memory=True)`: built in page-locked memory so that the copy
    that follows can run asynchronously, which creating on the device would not."""
    for arg in creator.args:
        if arg.keyword is not None and arg.keyword.value == "pin_memory":
            value = arg.value
            return not (isinstance(value, cst.Name) and value.value in ("False", "None"))
    return False


def _has_keyword(call: cst.Call, keyword: str) -> bool:
    return any(a.keyword is not None and a.keyword.value == keyword for a in call.args)


def _quoted(text: str, near: cst.CSTNode) -> str:
    """`text` as a string literal in the quotes the nearby code uses."""
    quote = '"'
    stack: list[cst.CSTNode] = [near]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.SimpleString) and string_value(node) is not None:
            quote = node.quote[0] if node.quote in ("'", '"') else '"'
            break
        stack.extend(all_children(node))
    return f"{quote}{text}{quote}"
