"""How the migrated script spells what it adds, in the file's own import style.

Existing imports are reused (`import torch.distributed as dist`, `import
torch.nn as nn` gives `nn.parallel.DistributedDataParallel`); a name imported
with `from torch.utils.data import DataLoader` gets `DistributedSampler` added
to the same statement; `from torch.nn.parallel import DataParallel` becomes
`from ... import DistributedDataParallel`. An added name must not collide with
one the script already binds.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from accel_lint.names import BindingKind, Scope, dotted_name, import_bindings, spelling_for
from accel_lint.rules.data_parallel.plan import Plan
from accel_lint.rules.data_parallel.shape import Names, NoFix
from accel_lint.torch_api import DDP, DISTRIBUTED_SAMPLER

# how the new code spells what it adds, when the file has no import to reuse
DDP_SPELLING = "torch.nn.parallel.DistributedDataParallel"
SAMPLER_SPELLING = "torch.utils.data.DistributedSampler"


def choose_names(
    module: cst.Module,
    module_scope: Scope,
    scopes: Sequence[Scope],
    dp_callee: cst.BaseExpression,
    dp_import: cst.SimpleStatementLine | None,
) -> Names:
    """Spellings valid in every scope of `scopes` (where the new code goes)."""
    plan = Plan()
    environ = _module_attribute("os.environ", module_scope, scopes, plan)
    cuda = _module_attribute("torch.cuda", module_scope, scopes, plan)
    dist = _dist(module_scope, scopes, plan)
    ddp = _ddp(module_scope, scopes, dp_callee, dp_import, plan)
    sampler = _sampler(module, module_scope, scopes, plan)
    return Names(environ, cuda, dist, ddp, sampler, plan)


def _existing(module_scope: Scope, targets: frozenset[str]) -> str | None:
    for local, target in sorted(import_bindings(module_scope).items()):
        if target in targets:
            return local
    return None


def _free(name: str, scopes: Sequence[Scope]) -> bool:
    return all(scope.lookup(name) is None for scope in scopes)


def _imported_as(name: str, targets: str | frozenset[str], scopes: Sequence[Scope]) -> bool:
    """`name` means one of `targets` (or is unbound) wherever the new code goes."""
    wanted = frozenset({targets}) if isinstance(targets, str) else targets
    for scope in scopes:
        bindings = scope.lookup(name)
        if bindings is None:
            continue
        if not all(b.kind is BindingKind.IMPORT and b.target in wanted for b in bindings):
            return False
    return True


def _module_attribute(
    qualified: str, module_scope: Scope, scopes: Sequence[Scope], plan: Plan
) -> str:
    """`os.environ`, `torch.cuda`: through an existing import, else `import <top>`."""
    text, needed = spelling_for(qualified, module_scope)
    if needed is not None:
        top = qualified.split(".")[0]
        text, needed = qualified, f"import {top}"
    return _checked(text, needed, module_scope, scopes, plan)


def _spell(qualified: str, module_scope: Scope, scopes: Sequence[Scope], plan: Plan) -> str:
    """A class: through an existing import, else `from <module> import <Class>`."""
    text, needed = spelling_for(qualified, module_scope)
    return _checked(text, needed, module_scope, scopes, plan)


def _checked(
    text: str, needed: str | None, module_scope: Scope, scopes: Sequence[Scope], plan: Plan
) -> str:
    """`text` if its first name means the same module-level import (or the one
    added) in every scope where the new code goes."""
    root = text.split(".")[0]
    if needed is None:
        bindings = module_scope.lookup(root)
        target = bindings[0].target if bindings else None
        if target is None or not _imported_as(root, target, scopes):
            raise NoFix(f"the name `{root}` means something else where the new code goes")
        return text
    if not _free(root, [module_scope, *scopes]) and not (
        needed == f"import {root}" and _imported_as(root, root, [module_scope, *scopes])
    ):
        raise NoFix(f"the name `{root}` is already taken in this script")
    plan.need(needed)
    return text


def _dist(module_scope: Scope, scopes: Sequence[Scope], plan: Plan) -> str:
    existing = _existing(module_scope, frozenset({"torch.distributed"}))
    if existing is not None and _imported_as(existing, "torch.distributed", scopes):
        return existing
    if _free("dist", [module_scope, *scopes]):
        plan.need("import torch.distributed as dist")
        return "dist"
    return _module_attribute("torch.distributed", module_scope, scopes, plan)


def _ddp(
    module_scope: Scope,
    scopes: Sequence[Scope],
    dp_callee: cst.BaseExpression,
    dp_import: cst.SimpleStatementLine | None,
    plan: Plan,
) -> str:
    existing = _existing(module_scope, DDP)
    if existing is not None and _imported_as(existing, DDP, scopes):
        return existing
    if isinstance(dp_callee, cst.Name) and dp_import is not None:
        # `from torch.nn import DataParallel`: the file imports classes by name
        name = "DistributedDataParallel"
        if not _free(name, [module_scope, *scopes]):
            raise NoFix(f"the name `{name}` is already taken in this script")
        _replace_dp_import(dp_import, dp_callee.value, plan)
        return name
    return _spell(DDP_SPELLING, module_scope, scopes, plan)


def _replace_dp_import(statement: cst.SimpleStatementLine, local: str, plan: Plan) -> None:
    """Drop the DataParallel name from its import; `from torch.nn.parallel import
    DataParallel` becomes `from torch.nn.parallel import DistributedDataParallel`."""
    node = statement.body[0]
    assert isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar)
    module = dotted_name(node.module) if node.module is not None else None
    aliases = list(node.names)
    index = next(i for i, a in enumerate(aliases) if _alias_local(a) == local)
    if module == "torch.nn.parallel":
        renamed = cst.ImportAlias(
            name=cst.Name("DistributedDataParallel"), comma=aliases[index].comma
        )
        plan.rewrite(node, lambda n: n.with_changes(names=_with_alias(n.names, index, renamed)))
        return
    plan.need("from torch.nn.parallel import DistributedDataParallel")
    if len(aliases) == 1:
        plan.remove(statement)
    else:
        plan.rewrite(node, lambda n: n.with_changes(names=_without_alias(n.names, index)))


def _alias_local(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return dotted_name(alias.name)


def _with_alias(
    aliases: Sequence[cst.ImportAlias], index: int, alias: cst.ImportAlias
) -> list[cst.ImportAlias]:
    out = list(aliases)
    out[index] = alias
    return out


def _without_alias(aliases: Sequence[cst.ImportAlias], index: int) -> list[cst.ImportAlias]:
    out = list(aliases)
    removed = out.pop(index)
    if index == len(out):  # the last one went: its neighbour takes its (trailing) comma
        out[-1] = out[-1].with_changes(comma=removed.comma)
    return out


def _sampler(module: cst.Module, module_scope: Scope, scopes: Sequence[Scope], plan: Plan) -> str:
    existing = _existing(module_scope, DISTRIBUTED_SAMPLER)
    if existing is not None and _imported_as(existing, DISTRIBUTED_SAMPLER, scopes):
        return existing
    name = "DistributedSampler"
    free = _free(name, [module_scope, *scopes])
    statement = _from_import_of(module, "torch.utils.data")
    if statement is not None and free:
        node = statement.body[0]
        assert isinstance(node, cst.ImportFrom)
        plan.rewrite(node, lambda n: n.with_changes(names=add_alias(n.names, name)))
        return name
    return _spell(SAMPLER_SPELLING, module_scope, scopes, plan)


def _from_import_of(module: cst.Module, name: str) -> cst.SimpleStatementLine | None:
    """The first top-level `from <name> import a, b` statement (no star, no alias list tricks)."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            continue
        node = statement.body[0]
        if (
            isinstance(node, cst.ImportFrom)
            and not node.relative
            and node.module is not None
            and dotted_name(node.module) == name
            and not isinstance(node.names, cst.ImportStar)
        ):
            return statement
    return None


def add_alias(aliases: Sequence[cst.ImportAlias], name: str) -> list[cst.ImportAlias]:
    """`aliases` with `name` added: in order when they are sorted (isort's
    case-insensitive order), else last; the list keeps its comma layout."""
    out = list(aliases)
    keys = [(dotted_name(a.name) or "").lower() for a in out]
    at = len(out)
    if keys == sorted(keys):
        at = next((i for i, key in enumerate(keys) if key > name.lower()), len(out))
    separator = next(
        (a.comma for a in out[:-1] if isinstance(a.comma, cst.Comma)),
        cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
    )
    new = cst.ImportAlias(name=cst.Name(name))
    if at == len(out):
        last = out[-1]
        out[-1] = last.with_changes(comma=separator)
        out.append(new.with_changes(comma=last.comma))
    else:
        out.insert(at, new.with_changes(comma=separator))
    return out
