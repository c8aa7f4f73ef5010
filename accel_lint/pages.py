"""Rule pages: the Markdown files of the top-level `rules/` folder, shipped in the
wheel as `accel_lint/_pages` and read from the checkout in a source tree."""

from __future__ import annotations

from pathlib import Path

PAGES_URL = "https://github.com/accel-lint/accel-lint/blob/main/rules"

_PACKAGE = Path(__file__).resolve().parent


def pages_dir() -> Path:
    bundled = _PACKAGE / "_pages"
    if bundled.is_dir() and any(bundled.glob("ACL*.md")):
        source = _PACKAGE.parent / "rules"
        # an editable install may also carry a stale copy; the checkout is the truth
        if source.is_dir() and (_PACKAGE.parent / "pyproject.toml").is_file():
            return source
        return bundled
    return _PACKAGE.parent / "rules"


def page_path(code: str) -> Path:
    return pages_dir() / f"{code}.md"


def read_page(code: str) -> str | None:
    path = page_path(code)
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def page_url(code: str) -> str:
    return f"{PAGES_URL}/{code}.md"
