"""Does the file capture CUDA graphs, through a call that makes them or a
`torch.compile` mode or option that does (as the file itself sets it)? A captured
graph needs its gradient tensors kept allocated, so in such a file neither ACL301
nor ACL302 reports anything.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from accel_lint.facts.file import CallSite, FileFacts
from accel_lint.facts.literals import string_value
from accel_lint.facts.torch_objects.kinds import Kind
from accel_lint.names import LOCAL, Scope, resolves_to

# What captures CUDA graphs (the modules' own spellings too: `torch.cuda.graphs.graph`).
_CUDA_GRAPHS = frozenset(
    {
        "torch.cuda.graph",
        "torch.cuda.graphs.graph",
        "torch.cuda.CUDAGraph",
        "torch.cuda.graphs.CUDAGraph",
        "torch.cuda.make_graphed_callables",
        "torch.cuda.graphs.make_graphed_callables",
        "torch.compiler.cudagraph_mark_step_begin",
    }
)
_COMPILE = frozenset({"torch.compile"})
_PARTIAL = frozenset({"functools.partial"})
_GRAPH_MODES = frozenset({"reduce-overhead", "max-autotune"})


def captures_cuda_graphs(
    facts: FileFacts, kind: Callable[[cst.BaseExpression, Scope], Kind]
) -> bool:
    """Does the file capture CUDA graphs? A graph replays into the gradient
    tensors it captured, so they must stay allocated between steps: there,
    `set_to_none=False` (or a zero-filling loop) is required, not slow."""
    for site, names in zip(facts.calls, facts.callee_names()):
        if not names or LOCAL in names:
            continue
        if names <= _CUDA_GRAPHS:
            return True
        if names <= _COMPILE and _compiles_graphs(facts, site):
            return True
        if names <= _PARTIAL and site.node.args:
            first = site.node.args[0]
            if (
                first.keyword is None
                and not first.star
                and resolves_to(first.value, site.scope, _COMPILE)
                and _compiles_graphs(facts, site)
            ):
                return True
    for site in facts.method_calls("compile"):
        # `model.compile(mode=...)`: `nn.Module.compile` forwards to `torch.compile`
        func = site.node.func
        assert isinstance(func, cst.Attribute)
        if kind(func.value, site.scope) is not Kind.OTHER and _compiles_graphs(facts, site):
            return True
    return False


def _compiles_graphs(facts: FileFacts, site: CallSite) -> bool:
    """`mode="reduce-overhead"` or `"max-autotune"` (both capture CUDA graphs), or
    `options={"triton.cudagraphs": True}`, as the file reads it: a literal, a
    constant, a literal dict splatted in, an argparse option's default. A mode
    chosen at run time is the user's choice, not the file's design: with the
    default run capturing nothing, its findings stand."""
    for arg in site.node.args:
        items: list[tuple[str, cst.BaseExpression]] = []
        if arg.star == "**" and isinstance(arg.value, cst.Name):
            spread = facts.kwargs_dict(arg.value, site.scope)
            if spread is not None and spread.resolvable:
                items = list(spread.values.items())
        elif arg.keyword is not None:
            items = [(arg.keyword.value, arg.value)]
        for key, value in items:
            if key == "mode" and _graph_mode(facts, value, site.scope):
                return True
            if key == "options" and _graph_options(facts, value, site.scope):
                return True
    return False


def _graph_mode(facts: FileFacts, value: cst.BaseExpression, scope: Scope) -> bool:
    option = facts.argparse_option_for(value)
    if option is not None and option.default is not None:
        value = option.default
    return string_value(facts.literal_value(value, scope)) in _GRAPH_MODES


def _graph_options(facts: FileFacts, value: cst.BaseExpression, scope: Scope) -> bool:
    flag: cst.BaseExpression | None = None
    if isinstance(value, cst.Dict):
        for element in value.elements:
            if (
                isinstance(element, cst.DictElement)
                and string_value(element.key) == "triton.cudagraphs"
            ):
                flag = element.value
    elif isinstance(value, cst.Name):
        spread = facts.kwargs_dict(value, scope)
        if spread is not None and spread.resolvable:
            flag = spread.values.get("triton.cudagraphs")
    return isinstance(flag, cst.Name) and flag.value == "True"
