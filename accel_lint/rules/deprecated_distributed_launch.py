"""ACL406 deprecated-distributed-launch: `torch.distributed.launch` run from code, or an
argparse `--local_rank` option that picks the device. Page: rules/ACL406.md

`torch.distributed.launch` passes each process its local rank as a `--local-rank`
argument; torchrun (`torch.distributed.run`), which replaced it, sets `LOCAL_RANK`
in the environment and passes nothing. A script that picks its GPU from
`args.local_rank` therefore puts every process on the option's default under
torchrun. The fix reads the environment first and keeps the option, with both
spellings, as the fallback: the script then runs under torchrun, under
`torch.distributed.launch` of any torch version, and as a single process.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from accel_lint.edits import add_keyword, code_for, set_keyword
from accel_lint.facts import ArgparseOption, CallSite
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.literals import int_value, string_value
from accel_lint.facts.syntax import argument_for, last_name, sub_expressions
from accel_lint.names import BindingKind, Scope, resolves_to, spelling_for
from accel_lint.rule import Equivalence, Fix, FixSafety, Launcher, Rule, Verification
from accel_lint.torch_api import (
    CUDA_SET_DEVICE,
    DATA_PARALLEL,
    DDP,
    DISTRIBUTED_LAUNCH,
    TORCH_DEVICE,
)

_FLAGS = ("--local_rank", "--local-rank")
_MAX_DEPTH = 3
# Calls that pick a device from their arguments.
_DEVICE_CALLS = CUDA_SET_DEVICE | TORCH_DEVICE | frozenset({"torch.cuda.device"})
_WRAPPERS = DDP | DATA_PARALLEL
_DEVICE_METHODS = frozenset({"cuda", "to"})
_DEVICE_KEYWORDS = frozenset({"device_ids", "output_device", "device"})
# Ways of running another program or module.
_RUNNERS = frozenset(
    {
        "subprocess.run",
        "subprocess.call",
        "subprocess.check_call",
        "subprocess.check_output",
        "subprocess.Popen",
        "os.system",
        "os.popen",
        "os.execv",
        "os.execvp",
        "os.execvpe",
        "runpy.run_module",
    }
)
_RUNNER_NAMES = frozenset(name.rpartition(".")[2] for name in _RUNNERS)
_DEPRECATED = (
    "`torch.distributed.launch` is deprecated: torchrun (`python -m torch.distributed.run`) "
    "replaced it, and sets `LOCAL_RANK` in the environment instead of passing `--local-rank`"
)
_LAUNCHED = (
    "the launched script must read `LOCAL_RANK` from the environment before the command "
    "can change to `torchrun` (torchrun passes no `--local-rank`)"
)


class DeprecatedDistributedLaunch(Rule):
    code = "ACL406"
    name = "deprecated-distributed-launch"
    summary = "torch.distributed.launch, or a --local_rank option that picks the device"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.CLOSE, launcher=Launcher.TORCHRUN)

    def setup(self) -> None:
        self._strings: list[cst.SimpleString] = []  # "LOCAL_RANK" literals, read or written
        self._stores: set[cst.CSTNode] = set()  # assignment targets
        self._cuda_formats: list[tuple[cst.BaseExpression, Scope]] = []

    # -- walk -----------------------------------------------------------------------

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = code_for(alias.name)
            if name == DISTRIBUTED_LAUNCH or name.startswith(DISTRIBUTED_LAUNCH + "."):
                self.report(alias, _DEPRECATED, no_fix_reason=_LAUNCHED)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        module = code_for(node.module)
        if module == DISTRIBUTED_LAUNCH or module.startswith(DISTRIBUTED_LAUNCH + "."):
            self.report(node, _DEPRECATED, no_fix_reason=_LAUNCHED)
        elif module == "torch.distributed" and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                if code_for(alias.name) == "launch":
                    self.report(alias, _DEPRECATED, no_fix_reason=_LAUNCHED)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._stores.update(t.target for t in node.targets)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if "LOCAL_RANK" in node.value:
            self._strings.append(node)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        # f"cuda:{args.local_rank}"
        if any(
            isinstance(part, cst.FormattedStringText) and "cuda" in part.value
            for part in node.parts
        ):
            self._cuda_formats.append((node, self.facts.scope))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        # "cuda:%d" % args.local_rank
        left = node.left
        if (
            isinstance(node.operator, cst.Modulo)
            and isinstance(left, cst.SimpleString)
            and "cuda" in left.value
        ):
            self._cuda_formats.append((node.right, self.facts.scope))

    # -- decide ---------------------------------------------------------------------

    def finish(self) -> None:
        self._runs_launcher()
        options = [
            option
            for option in self.facts.argparse_options.values()
            if any(flag in _FLAGS for flag in option.flags)
        ]
        if not options or self._reads_local_rank_env():
            return
        self._calls = CallGraph.of(self.facts)
        for option in options:
            if self._picks_device(option):
                self._report_option(option)

    def _runs_launcher(self) -> None:
        """`subprocess.run([sys.executable, "-m", "torch.distributed.launch", ...])`,
        `os.system("python -m torch.distributed.launch ...")`, `runpy.run_module(...)`."""
        for site in self.facts.calls:
            if not site.node.args or last_name(site.node.func) not in _RUNNER_NAMES:
                continue
            if not resolves_to(site.node.func, site.scope, _RUNNERS):
                continue
            if any(self._names_launcher(arg.value, site.scope, 0) for arg in site.node.args):
                self.report(site.node, _DEPRECATED, no_fix_reason=_LAUNCHED)

    def _names_launcher(self, expr: cst.BaseExpression, scope: Scope, depth: int) -> bool:
        if depth > _MAX_DEPTH:
            return False
        text = string_value(expr)
        if text is not None:
            return DISTRIBUTED_LAUNCH in text.split() or text == DISTRIBUTED_LAUNCH
        if isinstance(expr, cst.FormattedString):
            return any(
                isinstance(part, cst.FormattedStringText)
                and DISTRIBUTED_LAUNCH in part.value.split()
                for part in expr.parts
            )
        if isinstance(expr, cst.ConcatenatedString):
            return self._names_launcher(expr.left, scope, depth + 1) or self._names_launcher(
                expr.right, scope, depth + 1
            )
        if isinstance(expr, (cst.List, cst.Tuple)):
            return any(
                isinstance(e, cst.Element) and self._names_launcher(e.value, scope, depth + 1)
                for e in expr.elements
            )
        if isinstance(expr, cst.BinaryOperation):
            return self._names_launcher(expr.left, scope, depth + 1) or self._names_launcher(
                expr.right, scope, depth + 1
            )
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            # "...".format(...), " ".join([...])
            parts = [expr.func.value, *(arg.value for arg in expr.args)]
            return any(self._names_launcher(p, scope, depth + 1) for p in parts)
        if isinstance(expr, cst.Name):
            bindings = scope.lookup(expr.value) or []
            return any(
                b.value is not None
                and b.scope is not None
                and self._names_launcher(b.value, b.scope, depth + 1)
                for b in bindings
            )
        return False

    def _reads_local_rank_env(self) -> bool:
        """The script already takes `LOCAL_RANK` from the environment somewhere (not
        only writes it): it runs under torchrun as it is."""
        for node in self._strings:
            if string_value(node) != "LOCAL_RANK":
                continue
            if not any(_is_subscript_of(target, node) for target in self._stores):
                return True
        return False

    # -- does the option pick the device? ---------------------------------------------

    def _picks_device(self, option: ArgparseOption) -> bool:
        for site in self.facts.calls:
            for expr in self._device_arguments(site):
                if self._carries(expr, site.scope, option, 0):
                    return True
        return any(self._carries(expr, scope, option, 0) for expr, scope in self._cuda_formats)

    def _device_arguments(self, site: CallSite) -> Iterator[cst.BaseExpression]:
        """The arguments of `site` that name a device: of `torch.cuda.set_device(...)`,
        `torch.device(...)`, `x.cuda(...)`, `x.to(...)`, a wrapper's `device_ids=`."""
        call = site.node
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _DEVICE_METHODS:
            for position, arg in enumerate(call.args):
                keyword = arg.keyword.value if arg.keyword is not None else None
                if (keyword is None and position == 0) or keyword == "device":
                    yield arg.value
        elif resolves_to(func, site.scope, _DEVICE_CALLS):
            yield from (arg.value for arg in call.args)
        elif resolves_to(func, site.scope, _WRAPPERS):
            yield from (
                arg.value
                for arg in call.args
                if arg.keyword is not None and arg.keyword.value in _DEVICE_KEYWORDS
            )

    def _carries(
        self, expr: cst.BaseExpression, scope: Scope, option: ArgparseOption, depth: int
    ) -> bool:
        """`expr` holds the option's value: `args.local_rank`, or a name or attribute
        assigned from it (`local_rank = args.local_rank`, `args.gpu = args.local_rank`),
        or a parameter the file's calls fill with it."""
        if depth > _MAX_DEPTH:
            return False
        for sub in sub_expressions(expr):
            if isinstance(sub, cst.Attribute):
                if self.facts.argparse_option_for(sub) is option:
                    return True
                root = sub.value
                if isinstance(root, cst.Name):
                    for a in self.facts.attribute_assignments.get(sub.attr.value, ()):
                        if a.receiver == root.value and self._carries(
                            a.value, a.scope, option, depth + 1
                        ):
                            return True
            elif isinstance(sub, cst.Name) and self._name_carries(sub, scope, option, depth):
                return True
        return False

    def _name_carries(
        self, name: cst.Name, scope: Scope, option: ArgparseOption, depth: int
    ) -> bool:
        for binding in scope.lookup(name.value) or ():
            if binding.kind is BindingKind.IMPORT or binding.scope is None:
                continue
            node = binding.node
            if isinstance(node, cst.Param):
                func = binding.scope.node
                if not isinstance(func, cst.FunctionDef):
                    continue
                positional = [*func.params.posonly_params, *func.params.params]
                index = next((i for i, p in enumerate(positional) if p is node), None)
                for site, offset in self._calls.invocations(func):
                    value = argument_for(site.node, name.value, index, offset)
                    if value is not None and self._carries(value, site.scope, option, depth + 1):
                        return True
            elif binding.value is not None and self._carries(
                binding.value, binding.scope, option, depth + 1
            ):
                return True
        return False

    # -- report and fix ---------------------------------------------------------------

    def _report_option(self, option: ArgparseOption) -> None:
        flag = option.flag
        message = (
            f"`{flag}` is how `torch.distributed.launch` passed the local rank; torchrun "
            "passes nothing and sets `LOCAL_RANK` instead, so under torchrun every process "
            f"picks its device from the default of `{flag}`"
        )
        call = option.call
        reason = self._no_fix_reason(option)
        if reason is not None:
            self.report(call, message, no_fix_reason=reason)
            return
        scope = self._scope_of(option)
        environ, needed = spelling_for("os.environ", scope)
        default = option.default
        if default is None or (isinstance(default, cst.Name) and default.value == "None"):
            value = f'{environ}.get("LOCAL_RANK")'
        elif _int_type(call) and _int_literal(default):
            value = f'int({environ}.get("LOCAL_RANK", {code_for(default)}))'
        else:
            value = f'{environ}.get("LOCAL_RANK", {code_for(default)})'
        fixed = _with_both_spellings(call)
        fixed = (
            set_keyword(fixed, "default", value)
            if option.default_arg
            else add_keyword(fixed, "default", value)
        )
        fix = Fix(
            "Read `LOCAL_RANK` from the environment, keep the option as the fallback "
            "(launch with `torchrun`)",
            {call: fixed},
            (needed,) if needed else (),
        )
        self.report(call, message, fix)

    def _no_fix_reason(self, option: ArgparseOption) -> str | None:
        call = option.call
        for arg in call.args:
            if arg.star:
                return "the option's arguments are passed through `*args` / `**kwargs`"
            if arg.keyword is None:
                continue
            key = arg.keyword.value
            if key == "required" and not (
                isinstance(arg.value, cst.Name) and arg.value.value == "False"
            ):
                return "the option is required: make it optional with `LOCAL_RANK` as default"
            if key == "action" and string_value(arg.value) not in (None, "store"):
                return "the option is not a plain value"
        if option.default_arg is not None and option.default_arg not in call.args:
            return "the option's default is set elsewhere (`set_defaults`)"
        return None

    def _scope_of(self, option: ArgparseOption) -> Scope:
        for site in self.facts.method_calls("add_argument"):
            if site.node is option.call:
                return site.scope
        return self.facts.module_scope


def _is_subscript_of(target: cst.CSTNode, string: cst.SimpleString) -> bool:
    """`os.environ["LOCAL_RANK"] = ...`: the literal is written, not read."""
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return False
    index = target.slice[0].slice
    return isinstance(index, cst.Index) and index.value is string


def _int_type(call: cst.Call) -> bool:
    return any(
        arg.keyword is not None
        and arg.keyword.value == "type"
        and isinstance(arg.value, cst.Name)
        and arg.value.value == "int"
        for arg in call.args
    )


def _int_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    return isinstance(expr, cst.Integer) and int_value(expr) is not None


def _with_both_spellings(call: cst.Call) -> cst.Call:
    """`add_argument("--local_rank", ...)` also accepting `--local-rank`, which
    `torch.distributed.launch` passes from torch 2.0 on (and the other way round)."""
    args = list(call.args)
    flags = [i for i, arg in enumerate(args) if arg.keyword is None]
    spelled = {string_value(args[i].value) for i in flags}
    missing = [f for f in _FLAGS if f not in spelled]
    if not missing or not flags:
        return call
    last = args[flags[-1]]
    assert isinstance(last.value, cst.SimpleString)
    quote = last.value.value[-1]
    new = cst.Arg(value=cst.SimpleString(f"{quote}{missing[0]}{quote}"))
    if isinstance(last.comma, cst.Comma):
        # between the flags, the call's own separator (a new line in a tall call)
        new = new.with_changes(comma=last.comma)
    else:
        args[flags[-1]] = last.with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
    args.insert(flags[-1] + 1, new)
    return call.with_changes(args=args)
