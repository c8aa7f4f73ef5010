"""`FactsCollector` fills `FileFacts` during the one walk: scopes and bindings,
calls with their guards and loops, dict displays and updates. It runs first among
the visitors, and `ScopeCloser` last, so a rule's `leave_*` still sees the scope of
the node it leaves."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from accel_lint.facts.file import (
    AttributeAssignment,
    CallSite,
    FileFacts,
    LoopSite,
    is_exit_statement,
)
from accel_lint.facts.literals import _is_dict_display, string_value
from accel_lint.names import Binding, BindingKind, Scope, dotted_name


def _block_statements(block: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    if isinstance(block, cst.IndentedBlock):
        return block.body
    return ()


class FactsCollector:
    """Builds `FileFacts` during the walk; must be the first visitor."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self._exit_guards: list[int] = [0]

    # scopes -----------------------------------------------------------------

    def _push(self, kind: str, node: cst.CSTNode) -> Scope:
        scope = Scope(kind, node, self.facts.scope)
        self.facts.scope = scope
        self.facts.scope_of[node] = scope
        return scope

    def _bind(self, name: str, kind: BindingKind, **kw: object) -> None:
        self.facts.scope.bind(Binding(name, kind, **kw))  # type: ignore[arg-type]

    def _bind_target(
        self, target: cst.BaseExpression, value: cst.BaseExpression | None, node: cst.CSTNode
    ) -> None:
        if isinstance(target, cst.Name):
            kind = BindingKind.LOCAL
            if (
                value is not None
                and dotted_name(value) is not None
                and not (isinstance(value, cst.Name) and value.value in ("None", "True", "False"))
            ):
                kind = BindingKind.ALIAS
            self._bind(target.value, kind, value=value, node=node)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                inner = element.value
                if isinstance(inner, cst.StarredElement):
                    inner = inner.value
                self._bind_target(inner, None, node)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, None, node)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self._bind(alias.asname.name.value, BindingKind.IMPORT, target=full, node=node)
            else:
                top = full.split(".")[0]
                self._bind(top, BindingKind.IMPORT, target=top, node=node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted_name(node.module) if node.module is not None else None
        relative = bool(node.relative)
        if isinstance(node.names, cst.ImportStar):
            if module is not None and not relative:
                self.facts.scope.star_imports.append(module)
            return
        for alias in node.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            if relative or module is None:
                self._bind(local, BindingKind.LOCAL, node=node)
            else:
                self._bind(local, BindingKind.IMPORT, target=f"{module}.{name}", node=node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value, BindingKind.LOCAL, node=node)
        self.facts.function_defs.append((node, self.facts.scope, self.facts.class_def))
        self._push("function", node)
        self.facts.functions_stack.append(node)
        self._bind_params(node.params)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._push("function", node)
        self._bind_params(node.params)

    def _enter_body(self, node: cst.FunctionDef | cst.Lambda) -> None:
        # An `if` or loop around a def does not run its body: the body runs where it is
        # called. Decorators and defaults, evaluated at the def, keep the outer context.
        facts = self.facts
        facts.outer_context.append((facts.guards, facts.loops, facts.bodies, facts.withs))
        facts.guards = []
        facts.loops = []
        facts.bodies = []
        facts.withs = []

    visit_FunctionDef_body = _enter_body
    visit_Lambda_body = _enter_body

    def _bind_params(self, params: cst.Parameters) -> None:
        extras = [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
        for param in [*params.posonly_params, *params.params, *params.kwonly_params, *extras]:
            self._bind(param.name.value, BindingKind.LOCAL, node=param)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name.value, BindingKind.LOCAL, node=node)
        if self.facts.scope is self.facts.module_scope:
            self.facts.class_defs[node.name.value] = node
        self._push("class", node)
        self.facts.classes_stack.append(node)

    def _visit_comprehension(self, node: cst.CSTNode) -> None:
        self._push("comprehension", node)

    visit_ListComp = _visit_comprehension
    visit_SetComp = _visit_comprehension
    visit_DictComp = _visit_comprehension
    visit_GeneratorExp = _visit_comprehension

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_target(node.target, None, node)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.facts.scope.globals.add(item.name.value)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self.facts.scope.nonlocals.add(item.name.value)

    # bindings -----------------------------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind_target(target.target, node.value, node)
            self._note_attribute(target.target, node.value)
            if isinstance(target.target, cst.Name) and _is_dict_display(node.value):
                self.facts._dict_literals.append((target.target, node.value, self.facts.scope))
            elif isinstance(target.target, cst.Subscript) and isinstance(
                target.target.value, cst.Name
            ):
                self.facts._dict_updates.append(
                    (target.target.value, target.target, self.facts.scope, bool(self.facts.guards))
                )

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind_target(node.target, node.value, node)
        if node.value is not None:
            self._note_attribute(node.target, node.value)

    def _note_attribute(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            facts = self.facts
            facts.attribute_assignments.setdefault(target.attr.value, []).append(
                AttributeAssignment(
                    target.value.value, target.attr.value, value, facts.scope, facts.class_def
                )
            )

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target, None, node)
        self.facts.aug_assigns.append((node, self.facts.scope))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.facts._attributes.setdefault(node.attr.value, []).append((node, self.facts.scope))

    def _enter_loop(self, node: cst.For | cst.While) -> None:
        facts = self.facts
        facts.loop_sites[node] = LoopSite(
            node,
            facts.scope,
            facts.function,
            tuple(facts.guards),
            tuple(facts.bodies),
            tuple(facts.withs),
        )
        facts.loops.append(node)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target, None, node)
        self._enter_loop(node)

    def visit_While(self, node: cst.While) -> None:
        self._enter_loop(node)

    def _enter_loop_body(self, node: cst.For | cst.While) -> None:
        self.facts.bodies.append(node)

    visit_For_body = _enter_loop_body
    visit_While_body = _enter_loop_body

    def visit_With_body(self, node: cst.With) -> None:
        self.facts.withs.append(node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name, None, node)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self._bind(node.name.name.value, BindingKind.LOCAL, node=node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        if isinstance(node.target, cst.Name):
            self.facts.scope.function_scope().bind(
                Binding(node.target.value, BindingKind.LOCAL, value=node.value, node=node)
            )

    # calls and guards ---------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.facts
        site = CallSite(
            node,
            facts.scope,
            tuple(facts.guards),
            tuple(facts.loops),
            facts.function,
            tuple(facts.bodies),
            tuple(facts.withs),
        )
        facts.calls.append(site)
        func = node.func
        if isinstance(func, cst.Attribute):
            facts._method_calls.setdefault(func.attr.value, []).append(site)
            if func.attr.value == "update" and isinstance(func.value, cst.Name):
                facts._dict_updates.append((func.value, node, facts.scope, bool(facts.guards)))
            if func.attr.value == "to":
                for arg in node.args:
                    text = string_value(arg.value)
                    if text is not None and text.startswith("cuda"):
                        facts._cuda_string_uses += 1

    def visit_If_body(self, node: cst.If) -> None:
        self.facts.guards.append((node.test, True))

    def leave_If_body(self, node: cst.If) -> None:
        self.facts.guards.pop()

    def visit_If_orelse(self, node: cst.If) -> None:
        if node.orelse is not None:
            self.facts.guards.append((node.test, False))

    def leave_If_orelse(self, node: cst.If) -> None:
        if node.orelse is not None:
            self.facts.guards.pop()

    def leave_If(self, node: cst.If) -> None:
        # `if rank != 0: return` guards the rest of the enclosing block.
        if node.orelse is None:
            body = _block_statements(node.body)
            if body and is_exit_statement(body[-1], self.facts.scope):
                self.facts.guards.append((node.test, False))
                self._exit_guards[-1] += 1

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._exit_guards.append(0)

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        for _ in range(self._exit_guards.pop()):
            self.facts.guards.pop()

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        # "cuda" / "cuda:0" literals (device strings) mark a CUDA-touching file
        if node.value[-5:-1] == "cuda" or "cuda:" in node.value:
            text = string_value(node)
            if text is not None and (text == "cuda" or text.startswith("cuda:")):
                self.facts._cuda_string_uses += 1


class ScopeCloser:
    """Pops the walk context after every rule has left the node; must be the last visitor."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts

    def _pop_scope(self, node: cst.CSTNode) -> None:
        parent = self.facts.scope.parent
        assert parent is not None
        self.facts.scope = parent

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pop_scope(node)
        self.facts.functions_stack.pop()

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._pop_scope(node)
        self.facts.classes_stack.pop()

    leave_Lambda = _pop_scope
    leave_ListComp = _pop_scope
    leave_SetComp = _pop_scope
    leave_DictComp = _pop_scope
    leave_GeneratorExp = _pop_scope

    def _leave_body(self, node: cst.FunctionDef | cst.Lambda) -> None:
        facts = self.facts
        facts.guards, facts.loops, facts.bodies, facts.withs = facts.outer_context.pop()

    leave_FunctionDef_body = _leave_body
    leave_Lambda_body = _leave_body

    def _leave_loop_body(self, node: cst.For | cst.While) -> None:
        self.facts.bodies.pop()

    leave_For_body = _leave_loop_body
    leave_While_body = _leave_loop_body

    def leave_With_body(self, node: cst.With) -> None:
        self.facts.withs.pop()

    def leave_For(self, node: cst.For) -> None:
        self.facts.loops.pop()

    def leave_While(self, node: cst.While) -> None:
        self.facts.loops.pop()
