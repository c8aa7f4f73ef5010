"""`.gitignore` as git reads it, for discovery: the `.gitignore` of every
directory from the repository's root down, `.git/info/exclude` and the global
excludes file (`core.excludesFile`, else `$XDG_CONFIG_HOME/git/ignore`). Only
inside a git repository, as ruff and git do.

Patterns follow gitignore(5): `#` comments, `!` negation, a trailing `/` for
directories only, a `/` at the start or in the middle anchors the pattern to
its file's directory, `*`/`?`/`[...]` never cross a `/`, `**` does; the last
matching pattern wins, deeper files over shallower ones.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _translate(glob: str) -> str:
    out = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = glob.find("]", i + 2)
            if end < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = glob[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        elif c == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def parse(lines: list[str]) -> list[_Pattern]:
    patterns: list[_Pattern] = []
    for raw in lines:
        line = raw.rstrip("\n").rstrip("\r")
        if not line or line.startswith("#"):
            continue
        # trailing spaces are ignored unless escaped
        stripped = line.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += " "
        line = stripped
        negate = line.startswith("!")
        if negate:
            line = line[1:]  # a leading `\!` or `\#` is unescaped by _translate
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        regex = f"^{body}$" if anchored else f"^(?:.*/)?{body}$"
        patterns.append(_Pattern(re.compile(regex, re.DOTALL), negate, dir_only))
    return patterns


def _read(path: Path) -> list[_Pattern]:
    try:
        return parse(path.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return []


def repository_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        try:
            os.stat(directory / ".git")
        except OSError:  # absent, or a directory above it that we may not search
            continue
        return directory
    return None


def _global_excludes() -> Path | None:
    for config in (
        Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "git" / "config",
        Path.home() / ".gitconfig",
    ):
        try:
            text = config.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        m = re.search(r"^\s*excludesfile\s*=\s*(.+?)\s*$", text, re.MULTILINE | re.IGNORECASE)
        if m:
            return Path(os.path.expanduser(m.group(1).strip('"')))
    default = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "git" / "ignore"
    return default if default.is_file() else None


class GitIgnore:
    """Answers "is this path ignored by git" for paths inside one repository."""

    def __init__(self, root: Path) -> None:
        self.root = root
        base: list[_Pattern] = []
        excludes = _global_excludes()
        if excludes is not None:
            base += _read(excludes)
        base += _read(root / ".git" / "info" / "exclude")
        self._base = base
        self._files: dict[Path, list[_Pattern]] = {}

    @classmethod
    def for_path(cls, path: Path) -> GitIgnore | None:
        # realpath, not Path.resolve: a symlink loop named by the user is that file's
        # read error (ACL000), not the whole run's RuntimeError
        root = repository_root(Path(os.path.realpath(path)))
        return cls(root) if root is not None else None

    def _patterns(self, directory: Path) -> list[_Pattern]:
        found = self._files.get(directory)
        if found is None:
            found = self._files[directory] = _read(directory / ".gitignore")
        return found

    def ignored(self, path: str | os.PathLike[str], is_dir: bool) -> bool:
        absolute = Path(os.path.abspath(path))
        try:
            relative = absolute.relative_to(self.root)
        except ValueError:
            return False
        parts = relative.parts
        if not parts or parts[0] == ".git":
            return bool(parts)
        verdict = self._match(self._base, "/".join(parts), is_dir)
        directory = self.root
        for depth in range(len(parts)):
            local = "/".join(parts[depth:])
            outcome = self._match(self._patterns(directory), local, is_dir)
            if outcome is not None:
                verdict = outcome
            directory = directory / parts[depth]
        return bool(verdict)

    @staticmethod
    def _match(patterns: list[_Pattern], relative: str, is_dir: bool) -> bool | None:
        verdict: bool | None = None
        for pattern in patterns:
            if pattern.dir_only and not is_dir:
                continue
            if pattern.regex.match(relative):
                verdict = not pattern.negate
        return verdict

    def ignored_with_parents(self, path: str | os.PathLike[str]) -> bool:
        """A file named by the user: ignored itself, or inside an ignored directory."""
        absolute = Path(os.path.abspath(path))
        try:
            parts = absolute.relative_to(self.root).parts
        except ValueError:
            return False
        directory = self.root
        for part in parts[:-1]:
            directory = directory / part
            if self.ignored(directory, True):
                return True
        return self.ignored(absolute, False)
