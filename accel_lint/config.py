"""`[tool.accel-lint]` configuration to a frozen `Settings`.

Discovery: from a directory upward, the first `accel-lint.toml`, or
`pyproject.toml` with a `[tool.accel-lint]` table, wins (no merging, like ruff);
the command line asks it for each linted file's directory, so every file gets
the closest configuration above it (`cli.common`). Unknown keys and codes are errors naming the key.
Rule selection is layered like ruff's: the file's `select`/`extend-select`/
`ignore`, then the command line's; within a layer the most specific code or
prefix wins and `ignore` wins ties.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from accel_lint.diagnostic import PARSE_ERROR
from accel_lint.rules import BY_CODE, RULES, RuleEntry

if TYPE_CHECKING:
    from accel_lint.rule import Rule

DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".eggs",
    "__pycache__",
    "__pypackages__",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    ".mypy_cache",
    ".ruff_cache",
    ".accel_lint_cache",
    ".ipynb_checkpoints",
)

_KEYS = frozenset(
    {
        "select",
        "ignore",
        "extend-select",
        "per-file-ignores",
        "exclude",
        "unsafe-fixes",
        "target-torch",
        "rules",
        "extend",
        "respect-gitignore",
        "baseline",
    }
)


class ConfigError(Exception):
    """A configuration or selection error; the CLI prints it and exits 2."""


@dataclass(frozen=True)
class Selection:
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


@dataclass(frozen=True)
class Settings:
    enabled: frozenset[str]
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    unsafe_fixes: bool = False
    target_torch: tuple[int, int] | None = None
    rule_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    root: Path = field(default_factory=Path.cwd)
    config_file: Path | None = None
    respect_gitignore: bool = True
    extended: tuple[Path, ...] = ()  # the files `extend` brought in, outermost last
    # where `target_torch` came from, for `--show-settings`
    target_torch_from: str = "default: the latest torch"
    baseline: Path | None = None  # `baseline = "FILE"`, relative to the configuration

    def options_for(self, rule: type[Rule]) -> dict[str, Any]:
        values = {name: opt.default for name, opt in rule.options.items()}
        values.update(self.rule_options.get(rule.code, {}))
        return values

    def codes_for(self, path: str | os.PathLike[str]) -> frozenset[str]:
        """Enabled codes for one file, after per-file-ignores."""
        codes = self.enabled
        for pattern, ignored in self.per_file_ignores:
            if path_matches(path, pattern, self.root):
                codes = codes - ignored
        return codes

    def is_excluded(self, path: str | os.PathLike[str]) -> bool:
        # Discovery asks this for every file and directory: a literal name such as
        # `.git` or `build` (every default) is a lookup in the path's parts.
        _, parts = _relative_parts(path, self.root)
        return any(
            pattern.rstrip("/") in parts
            if "/" not in pattern.rstrip("/") and not _GLOB_CHARS.intersection(pattern)
            else path_matches(path, pattern, self.root)
            for pattern in self.exclude
        )

    def fingerprint(self) -> str:
        """Stable hash of everything that changes lint results (for the cache key)."""
        data = {
            "enabled": sorted(self.enabled),
            "pfi": [[p, sorted(c)] for p, c in self.per_file_ignores],
            "unsafe": self.unsafe_fixes,
            "torch": self.target_torch,
            "opts": {k: dict(v) for k, v in sorted(self.rule_options.items())},
        }
        import hashlib  # only a cached run asks

        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


_GLOB_CHARS = frozenset("*?[")


def _relative_parts(path: str | os.PathLike[str], root: Path) -> tuple[PurePath, tuple[str, ...]]:
    p = PurePath(os.path.abspath(path))
    try:
        return p, p.relative_to(os.path.abspath(root)).parts
    except ValueError:
        return p, p.parts


def path_matches(path: str | os.PathLike[str], pattern: str, root: Path) -> bool:
    """Glob match on the path relative to `root`, on any of its trailing parts, or
    on the file name; so `tests/*.py`, `legacy` and `*_test.py` all do what they say."""
    p, parts = _relative_parts(path, root)
    rel_str = "/".join(parts)
    if fnmatch.fnmatchcase(rel_str, pattern) or fnmatch.fnmatchcase(p.as_posix(), pattern):
        return True
    if "/" not in pattern.rstrip("/"):
        bare = pattern.rstrip("/")
        return any(fnmatch.fnmatchcase(part, bare) for part in parts)
    # a pattern naming a directory covers everything below it
    return any(
        fnmatch.fnmatchcase("/".join(parts[:i]), pattern.rstrip("/")) for i in range(1, len(parts))
    )


def _check_codes(codes: Iterable[str], where: str) -> None:
    known = list(BY_CODE)
    for code in codes:
        if code in ("ALL", PARSE_ERROR):  # ACL000 is accepted; it cannot be turned off
            continue
        if not re.fullmatch(r"ACL\d{0,3}", code) or not any(k.startswith(code) for k in known):
            raise ConfigError(f"{where}: unknown rule code or prefix {code!r}")


def resolve_selection(layers: Sequence[Selection]) -> frozenset[str]:
    rules: tuple[RuleEntry, ...] = RULES
    enabled = {r.code for r in rules if r.default_enabled}
    for layer in layers:
        _check_codes((*(layer.select or ()), *layer.extend_select, *layer.ignore), "selection")
        selectors = [*(layer.select or ()), *layer.extend_select]
        if layer.select is not None:
            enabled = set()
        for rule in rules:
            on = _specificity(rule.code, selectors)
            off = _specificity(rule.code, layer.ignore)
            if on > off:
                enabled.add(rule.code)
            elif off >= 0 and off >= on:
                enabled.discard(rule.code)
    return frozenset(enabled)


def _specificity(code: str, selectors: Iterable[str]) -> int:
    best = -1
    for sel in selectors:
        if sel == "ALL":
            best = max(best, 0)
        elif code.startswith(sel):
            best = max(best, len(sel))
    return best


def find_config(start: Path) -> Path | None:
    """The nearest accel-lint.toml, or pyproject.toml with [tool.accel-lint]."""
    directory = start if start.is_dir() else start.parent
    for candidate_dir in [directory, *directory.parents]:
        found = config_in(candidate_dir)
        if found is not None:
            return found
    return None


def config_in(directory: Path) -> Path | None:
    """The configuration file in `directory` itself, or None."""
    # os.path.isfile: a directory we may not search holds no configuration we can use
    own = directory / "accel-lint.toml"
    if os.path.isfile(own):
        return own
    pyproject = directory / "pyproject.toml"
    if os.path.isfile(pyproject) and "accel-lint" in _table(
        _read_toml(pyproject), "tool", pyproject
    ):
        return pyproject
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    # loaded only when a configuration file is read
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: invalid TOML: not UTF-8 ({exc.reason} at byte {exc.start})"
        ) from exc


def _table(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    """`data[key]` when it is a table, {} when absent; anything else is an error."""
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: `{key}` must be a table (found {type(value).__name__})")
    return value


def _config_table(path: Path) -> dict[str, Any]:
    data = _read_toml(path)
    if path.name == "pyproject.toml":
        table = _table(data, "tool", path).get("accel-lint", {})
    else:
        table = _table(data, "tool", path).get("accel-lint", data)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.accel-lint] must be a table")
    return table


PATTERNS_SUPPORTED = (
    "a name (`legacy`, matching a file or directory of that name anywhere), a path "
    "relative to the configuration's directory (`src/legacy`, `tests/*.py`), or a glob "
    "of a file name (`*_test.py`); `*`, `?` and `[...]` as in fnmatch"
)


def check_pattern(pattern: str, key: str, where: Path | str) -> str:
    """`pattern` if `path_matches` can do what it says; otherwise a ConfigError that
    says what is supported (a pattern that silently matches nothing is worse)."""
    problem = None
    if not pattern.strip():
        problem = "is empty"
    elif pattern.startswith("!"):
        problem = "is a negation (`!`), which is not supported"
    elif pattern.startswith(("./", "../")) or "/./" in pattern or "/../" in pattern:
        problem = "starts with or contains `.` or `..`; write it relative to the configuration"
    elif "\\" in pattern:
        problem = "contains a backslash; use `/` between parts"
    elif _unclosed_bracket(pattern):
        problem = "has a `[` without its `]`"
    if problem is not None:
        raise ConfigError(f"{where}: {key} pattern {pattern!r} {problem}; use {PATTERNS_SUPPORTED}")
    return pattern


def _unclosed_bracket(pattern: str) -> bool:
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] == "!":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            close = pattern.find("]", j)
            if close < 0:
                return True
            i = close
        i += 1
    return False


def _str_list(value: Any, key: str, path: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: `{key}` must be a list of strings")
    return tuple(value)


def parse_version(text: str) -> tuple[int, int] | None:
    m = re.match(r"^\s*(\d+)(?:\.(\d+))?", text)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2) or 0)


_TARGET_TORCH = re.compile(r"([1-9][0-9]*)\.([0-9]+)(?:\.[0-9]+)?")


def _target_torch(raw: Any, where: Path) -> tuple[int, int]:
    """A torch release, as a string: "2.1" or "1.13.1". Not a number (1.10 in TOML is
    the float 1.1), not a major version alone ("2" would mean 2.0 to one reader and
    any 2.x to another), nothing after the version."""
    if not isinstance(raw, str):
        got = (
            f"the TOML float {raw!r}: quote the version, or 1.10 reads as 1.1"
            if isinstance(raw, float)
            else _toml(raw)
        )
        raise ConfigError(
            f'{where}: `target-torch` must be a string such as "2.1", not {raw!r} (got {got})'
        )
    match = _TARGET_TORCH.fullmatch(raw.strip())
    if match is None:
        raise ConfigError(
            f'{where}: `target-torch` must be a string such as "2.1" or "1.13.1" naming a '
            f"torch release (got {_toml(raw)})"
        )
    return int(match.group(1)), int(match.group(2))


def infer_target_torch(pyproject: Path) -> tuple[int, int] | None:
    """The oldest torch the project supports, from its own `torch` requirement."""
    if not pyproject.is_file():
        return None
    try:
        data = _read_toml(pyproject)
    except ConfigError:
        return None
    project = _table(data, "project", pyproject)
    requirements: list[object] = list(
        _str_list(project.get("dependencies", []), "project.dependencies", pyproject)
    )
    extras = _table(project, "optional-dependencies", pyproject)
    for name, extra in extras.items():
        requirements.extend(_str_list(extra, f"project.optional-dependencies.{name}", pyproject))
    for req in requirements:
        if not isinstance(req, str):
            continue
        m = re.match(r"^\s*torch\s*(\[[^\]]*\])?\s*(.*)$", req.split(";")[0])
        if not m:
            continue
        spec = m.group(2)
        for op, version in re.findall(r"(>=|==|~=|>)\s*([0-9][0-9.]*)", spec):
            del op
            return parse_version(version)
    return None


def load_settings(
    *,
    config_path: Path | None = None,
    search_from: Path | None = None,
    cli: Selection | None = None,
    unsafe_fixes: bool | None = None,
    isolated: bool = False,
    extend_exclude: Sequence[str] = (),
) -> Settings:
    """Settings from the discovered (or given) config file plus command-line overrides."""
    path = config_path
    if path is None and not isolated:
        path = find_config((search_from or Path.cwd()).resolve())
    table: dict[str, Any] = {}
    extended: list[Path] = []
    if path is not None:
        problem = _not_a_config_file(path)
        if problem is not None:
            raise ConfigError(f"{path}: {problem}")
        table = _extended_table(path, extended)
    where = path or Path("<defaults>")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key `{unknown[0]}` in [tool.accel-lint] "
            f"(known: {', '.join(sorted(_KEYS))})"
        )
    file_layer = Selection(
        select=_str_list(table["select"], "select", where) if "select" in table else None,
        extend_select=_str_list(table.get("extend-select", []), "extend-select", where),
        ignore=_str_list(table.get("ignore", []), "ignore", where),
    )
    try:
        _check_codes(
            (*(file_layer.select or ()), *file_layer.extend_select, *file_layer.ignore), str(where)
        )
        enabled = resolve_selection([file_layer, *([cli] if cli else [])])
    except ConfigError as exc:
        raise ConfigError(str(exc)) from None

    pfi_raw = table.get("per-file-ignores", {})
    if not isinstance(pfi_raw, dict):
        raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
    per_file: list[tuple[str, frozenset[str]]] = []
    codes = BY_CODE
    for pattern, pcodes in pfi_raw.items():
        check_pattern(pattern, "per-file-ignores", where)
        plist = _str_list(pcodes, f"per-file-ignores.{pattern}", where)
        _check_codes(plist, f"{where}: per-file-ignores.{pattern}")
        expanded = {c for c in codes if any(c.startswith(p) or p == "ALL" for p in plist)}
        per_file.append((pattern, frozenset(expanded)))

    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    if "exclude" in table:
        exclude = DEFAULT_EXCLUDE + tuple(
            check_pattern(p, "exclude", where)
            for p in _str_list(table["exclude"], "exclude", where)
        )
    exclude += tuple(check_pattern(p, "--extend-exclude", where) for p in extend_exclude)
    respect_gitignore = table.get("respect-gitignore", True)
    if not isinstance(respect_gitignore, bool):
        raise ConfigError(f"{where}: `respect-gitignore` must be true or false")

    unsafe = table.get("unsafe-fixes", False)
    if not isinstance(unsafe, bool):
        raise ConfigError(f"{where}: `unsafe-fixes` must be true or false")
    if unsafe_fixes is not None:
        unsafe = unsafe_fixes

    root = path.parent if path is not None else (search_from or Path.cwd()).resolve()
    if root.is_file():
        root = root.parent
    target: tuple[int, int] | None = None
    target_from = "default: the latest torch"
    if "target-torch" in table:
        target = _target_torch(table["target-torch"], where)
        target_from = f"`target-torch` in {where}"
    elif not isolated:  # --isolated reads no file, the project's dependencies included
        target = infer_target_torch(root / "pyproject.toml")
        if target is not None:
            target_from = f"the torch requirement in {root / 'pyproject.toml'}"

    baseline: Path | None = None
    if "baseline" in table:
        if not isinstance(table["baseline"], str) or not table["baseline"].strip():
            raise ConfigError(f"{where}: `baseline` must be the path of a baseline file")
        baseline = root / os.path.expanduser(table["baseline"])

    rule_options = _rule_options(table.get("rules", {}), where)
    return Settings(
        enabled=enabled,
        per_file_ignores=tuple(per_file),
        exclude=exclude,
        unsafe_fixes=unsafe,
        target_torch=target,
        rule_options=rule_options,
        root=root,
        config_file=path,
        respect_gitignore=respect_gitignore,
        extended=tuple(extended),
        target_torch_from=target_from,
        baseline=baseline,
    )


def _not_a_config_file(path: Path) -> str | None:
    """Why `path` cannot be a configuration file (before anything is read from it: a
    device such as /dev/zero would never end), or None."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "configuration file not found"
    except OSError as exc:
        return f"cannot read configuration file: {exc.strerror}"
    if stat.S_ISDIR(mode):
        return "is a directory, not a configuration file"
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "a special file")
        return f"not a regular file ({kind}), so not a configuration file"
    return None


_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _extended_table(path: Path, chain: list[Path]) -> dict[str, Any]:
    """The file's table on top of the one its `extend` names (relative to the file),
    recursively; `rules` and `per-file-ignores` merge per entry, other keys replace."""
    table = _config_table(path)
    if "extend" not in table:
        return table
    target = table.pop("extend")
    if not isinstance(target, str):
        raise ConfigError(f"{path}: `extend` must be the path of another configuration file")
    base_path = (path.parent / os.path.expanduser(target)).resolve()
    if base_path in chain or base_path == path.resolve():
        raise ConfigError(f"{path}: `extend` makes a cycle through {base_path}")
    problem = _not_a_config_file(base_path)
    if problem is not None:
        raise ConfigError(f"{path}: `extend`: {base_path}: {problem}")
    chain.append(base_path)
    base = _extended_table(base_path, chain)
    merged = {**base, **table}
    for key in ("rules", "per-file-ignores"):
        if isinstance(base.get(key), dict) and isinstance(table.get(key), dict):
            merged[key] = {**base[key], **table[key]}
    return merged


def _rule_options(raw: Any, where: Path) -> dict[str, dict[str, Any]]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: `rules` must be a table of [tool.accel-lint.rules.<CODE>]")
    result: dict[str, dict[str, Any]] = {}
    for code, values in raw.items():
        entry = BY_CODE.get(code)
        if entry is None:
            raise ConfigError(f"{where}: unknown rule code `{code}` in [tool.accel-lint.rules]")
        if not isinstance(values, dict):
            raise ConfigError(f"{where}: [tool.accel-lint.rules.{code}] must be a table")
        rule = entry.rule
        for key, value in values.items():
            opt = rule.options.get(key)
            if opt is None:
                known = ", ".join(sorted(rule.options)) or "none"
                raise ConfigError(
                    f"{where}: unknown key `{key}` in [tool.accel-lint.rules.{code}] "
                    f"(known: {known})"
                )
            if not opt.accepts(value):
                raise ConfigError(
                    f"{where}: [tool.accel-lint.rules.{code}] `{key}` must be {opt.expected} "
                    f"(got {_toml(value)})"
                )
        result[code] = dict(values)
    return result


def _toml(value: Any) -> str:
    """A configured value as the user wrote it, with its TOML type when that is the
    problem: `true`, `"x"`, `1.1 (a float)`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, float):
        return f"{value!r} (a float)"
    if isinstance(value, (list, dict)):
        return f"a {'list' if isinstance(value, list) else 'table'}"
    return repr(value)


def parse_codes(value: str | None, option: str = "--select") -> tuple[str, ...] | None:
    """`--select ACL1,ACL301` to a tuple; None when the option was not given. Given
    with no code (`--select ""`) is an error: it would select nothing and pass."""
    if value is None:
        return None
    codes = tuple(
        c.strip().upper() if c.strip().upper() == "ALL" else c.strip()
        for c in value.split(",")
        if c.strip()
    )
    if not codes:
        raise ConfigError(f"{option} needs at least one rule code or prefix (or ALL)")
    return codes
