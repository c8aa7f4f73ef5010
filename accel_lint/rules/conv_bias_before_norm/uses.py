"""Whether every use of a conv module is one where its output feeds a norm. Dropping
the bias is only harmless when no other caller sees the conv's raw output: a conv
built inline has no other use; one bound to a name or `self.<attr>` may be called,
moved or returned elsewhere, in this class, through another object, or by a
subclass that calls it differently or replaces the norm."""

from __future__ import annotations

import libcst as cst

from accel_lint.rules.conv_bias_before_norm.collected import Collected, Edge
from accel_lint.torch_api import MODULE_RETURNS_SELF

# Methods that call the module or return it (so its output could flow anywhere).
_CALLING_ATTRS = MODULE_RETURNS_SELF | {"forward", "__call__", "_apply"}


def only_feeds_norms(seen: Collected, edges: list[Edge]) -> bool:
    """Every use of the conv these edges start from is one of them, or harmless."""
    holder = edges[0].holder
    uses: set[cst.CSTNode] = {e.use for e in edges}
    if holder.kind == "inline":
        return True  # built where it is used: this is its only use
    if holder.kind == "name":
        binding = holder.binding
        assert binding is not None and binding.scope is not None
        assert isinstance(binding.node, cst.Assign)
        if binding.scope.node is None:
            return False
        store = binding.node.targets[0].target
        return all(
            ref is store or ref in uses or _harmless(seen.receiver_attr.get(ref))
            for ref in seen.refs_within(binding.name, binding.scope)
        )
    cls = holder.cls
    assert cls is not None
    for node in seen.self_attrs.get(cls, {}).get(holder.attr, []):
        if not (
            node in seen.store_nodes or node in uses or _harmless(seen.receiver_attr.get(node))
        ):
            return False
    for node in seen.attr_refs.get(holder.attr, []):
        if not _harmless(seen.receiver_attr.get(node)):
            return False  # `model.conv(x)` elsewhere: its output goes somewhere else
    # a subclass may call the conv differently or replace the norm
    touched = {holder.attr} | {e.norm_holder.attr for e in edges if e.norm_holder.kind == "attr"}
    return not any(touched & set(seen.self_attrs.get(sub, {})) for sub in seen.descendants(cls))


def _harmless(attr: str | None) -> bool:
    """Reading `conv.<attr>` (weight, out_channels, a hook) leaves its output where it was."""
    return attr is not None and attr not in _CALLING_ATTRS
