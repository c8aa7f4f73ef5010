"""ACL209 tensor-core-misaligned-dims: literal `nn.Linear` / `nn.Embedding` sizes that
are not multiples of 8 in a file that runs CUDA autocast in float16 or bfloat16.
Page: rules/ACL209.md"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from accel_lint.facts.file import CallSite
from accel_lint.facts.literals import int_value
from accel_lint.facts.precision import Precision
from accel_lint.facts.syntax import argument_for
from accel_lint.names import Scope, resolves_to
from accel_lint.rule import FixSafety, Rule
from accel_lint.torch_api import EMBEDDING, LINEAR

# (parameter, position) of the sizes each layer takes
_LINEAR_SIZES = (("in_features", 0), ("out_features", 1))
_EMBEDDING_SIZES = (("num_embeddings", 0), ("embedding_dim", 1))
_ALIGNMENT = 8
_VOCABULARY_ALIGNMENT = 64
_OPERATORS: dict[type[cst.BaseBinaryOp], Callable[[int, int], int | None]] = {
    cst.Add: lambda a, b: a + b,
    cst.Subtract: lambda a, b: a - b,
    cst.Multiply: lambda a, b: a * b,
    cst.FloorDivide: lambda a, b: a // b if b else None,
}


class TensorCoreMisalignedDims(Rule):
    code = "ACL209"
    name = "tensor-core-misaligned-dims"
    summary = "Linear/Embedding sizes not multiples of 8 under float16/bfloat16 autocast"
    fix_safety = FixSafety.NONE

    def finish(self) -> None:
        facts = self.facts
        if not facts.touches_cuda or not Precision.of(facts).half_cuda_autocasts():
            return
        for site in facts.calls_resolving_to(LINEAR | EMBEDDING):
            embedding = resolves_to(site.node.func, site.scope, EMBEDDING)
            self._check(site, _EMBEDDING_SIZES if embedding else _LINEAR_SIZES, embedding)

    def _check(self, site: CallSite, sizes: tuple[tuple[str, int], ...], embedding: bool) -> None:
        misaligned: list[tuple[str, int]] = []
        for name, position in sizes:
            expr = argument_for(site.node, name, position, 0)
            value = self._integer(expr, site.scope) if expr is not None else None
            if value is not None and value >= _ALIGNMENT and value % _ALIGNMENT:
                misaligned.append((name, value))
        if not misaligned:
            return
        shown = " and ".join(f"`{name}={value}`" for name, value in misaligned)
        verb = "are not multiples" if len(misaligned) > 1 else "is not a multiple"
        if not embedding:
            advice = (
                "its matrix multiplications cannot use Tensor Cores fully; pad to a "
                f"multiple of {_ALIGNMENT}"
            )
        else:
            parts = []
            if any(name == "num_embeddings" for name, _ in misaligned):
                parts.append(
                    "an output layer over a vocabulary this size runs misaligned matrix "
                    f"multiplications; pad the vocabulary to a multiple of {_VOCABULARY_ALIGNMENT} "
                    "(the extra rows are never looked up)"
                )
            if any(name == "embedding_dim" for name, _ in misaligned):
                parts.append(
                    "the layers that read these embeddings run misaligned matrix "
                    f"multiplications; pad to a multiple of {_ALIGNMENT}"
                )
            advice = "; ".join(parts)
        layer = "Embedding" if embedding else "Linear"
        self.report(
            site.node,
            f"{layer} {shown} {verb} of {_ALIGNMENT}: under float16/bfloat16 autocast {advice}",
        )

    def _integer(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> int | None:
        """The integer a literal, a name bound once to one, or arithmetic on them denotes."""
        if depth > 8:
            return None
        expr = self.facts.literal_value(expr, scope)
        if isinstance(expr, cst.Integer):
            return int_value(expr)
        if isinstance(expr, cst.BinaryOperation):
            operator = _OPERATORS.get(type(expr.operator))
            left = self._integer(expr.left, scope, depth + 1)
            right = self._integer(expr.right, scope, depth + 1)
            if operator is None or left is None or right is None:
                return None
            return operator(left, right)
        return None
