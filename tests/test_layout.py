"""Lines a fix makes too long are split as black would; nothing else moves."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from accel_lint.engine import diagnostics
from accel_lint.fixer import fix_source
from accel_lint.source import Source
from tests.support import fix, settings_for

PIN = settings_for(("ACL102",))
BOTH = settings_for(("ACL101", "ACL102"), unsafe=True)
HEADER = (
    "import os\n\nimport torch\nfrom torch.utils.data import DataLoader\n\n"
    'device = torch.device("cuda")\n'
    'if __name__ == "__main__":\n    import train\n'  # a guarded script: ACL101 fixes
)


def _fixed(body: str, settings: object = PIN) -> str:
    text = fix(HEADER + textwrap.dedent(body), settings)  # type: ignore[arg-type]
    assert text.startswith(HEADER)
    return text[len(HEADER) :]


def test_a_call_that_no_longer_fits_gets_its_arguments_on_one_indented_line() -> None:
    assert _fixed(
        """\
        def main(dataset):
            train_loader = DataLoader(dataset, batch_size=64, shuffle=True, drop_last=True)
            return train_loader
        """
    ) == textwrap.dedent(
        """\
        def main(dataset):
            train_loader = DataLoader(
                dataset, batch_size=64, shuffle=True, drop_last=True, pin_memory=True
            )
            return train_loader
        """
    )


def test_one_argument_per_line_with_a_trailing_comma_when_one_line_is_not_enough() -> None:
    assert _fixed(
        """\
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, collate_fn=fn)  # keep
        """,
        BOTH,
    ) == textwrap.dedent(
        """\
        loader = DataLoader(
            dataset,
            batch_size=batch_size,
            shuffle=True,
            collate_fn=fn,
            num_workers=min(8, os.cpu_count() or 1),
            pin_memory=True,
        )  # keep
        """
    )


def test_a_multi_line_call_is_filled_in_its_own_indentation() -> None:
    # visual indent (aligned with the bracket) and hanging indent
    assert _fixed(
        """\
        train_loader = torch.utils.data.DataLoader(train_set, batch_size=36,
                                                   shuffle=True, num_workers=0)
        loader = DataLoader(
            dataset=train_set, batch_size=batch_size, shuffle=True, collate_fn=None)
        """,
        BOTH,
    ) == textwrap.dedent(
        """\
        train_loader = torch.utils.data.DataLoader(train_set, batch_size=36,
                                                   shuffle=True,
                                                   num_workers=min(8, os.cpu_count() or 1),
                                                   pin_memory=True)
        loader = DataLoader(
            dataset=train_set, batch_size=batch_size, shuffle=True, collate_fn=None,
            num_workers=min(8, os.cpu_count() or 1), pin_memory=True)
        """
    )


def test_short_lines_and_lines_no_longer_than_the_file_s_own_are_left_alone() -> None:
    long_line = "x = " + " + ".join(["1"] * 40) + "\n"  # 161 characters: the file's width
    body = long_line + "loader = DataLoader(dataset, batch_size=32, shuffle=True, drop_last=True)\n"
    assert _fixed(body) == long_line + (
        "loader = DataLoader(dataset, batch_size=32, shuffle=True, drop_last=True, "
        "pin_memory=True)\n"
    )


def test_a_long_display_around_the_call_is_not_ours_to_lay_out() -> None:
    body = "loaders = [DataLoader(dataset_a, batch_size=32, shuffle=True), DataLoader(b)]\n"
    assert _fixed(body) == (
        "loaders = [DataLoader(dataset_a, batch_size=32, shuffle=True, pin_memory=True), "
        "DataLoader(b, pin_memory=True)]\n"
    )


def test_tab_indented_files_are_left_as_the_fix_made_them() -> None:
    body = (
        "def main(dataset):\n"
        "\tloader = DataLoader(dataset, batch_size=64, shuffle=True, drop_last=True)\n"
    )
    assert _fixed(body) == body.replace("drop_last=True)", "drop_last=True, pin_memory=True)")


def test_crlf_and_idempotence() -> None:
    text = (
        HEADER
        + "def main(dataset):\n"
        + "    train_loader = DataLoader(dataset, batch_size=64, shuffle=True, drop_last=True)\n"
    ).replace("\n", "\r\n")
    once = fix(text, PIN)
    assert once.endswith(
        "    train_loader = DataLoader(\r\n"
        "        dataset, batch_size=64, shuffle=True, drop_last=True, pin_memory=True\r\n"
        "    )\r\n"
    )
    assert "\n" not in once.replace("\r\n", "")
    assert fix(once, PIN) == once


def test_remaining_findings_point_at_the_laid_out_lines() -> None:
    text = HEADER + (
        "def main(dataset):\n"
        "    train_loader = DataLoader(dataset, batch_size=64, shuffle=True, drop_last=True)\n"
        "    return train_loader\n"
    )
    settings = settings_for(("ACL101", "ACL102"))  # ACL101's fix is unsafe: it remains
    outcome = fix_source(
        "t.py",
        Source(text, "utf-8"),
        settings,
        settings.enabled,
        unsafe=False,
    )
    assert outcome.remaining is not None
    lines = outcome.fixed_text.splitlines()
    rows = [d.row for d in diagnostics(outcome.remaining)]
    assert [lines[r - 1].strip() for r in rows] == ["train_loader = DataLoader("]


def test_a_noqa_stays_on_the_reported_line_when_its_call_is_split() -> None:
    """The unsafe ACL101 fix lengthens a call whose ACL102 is suppressed: the split
    keeps `# noqa` on the call's first line (the reported one), so ACL102 stays
    suppressed and a second pass changes nothing."""
    body = (
        "def main(dataset):\n"
        "    loader = DataLoader(dataset, batch_size=64, shuffle=True, drop_last=True)"
        "  # noqa: ACL102\n"
    )
    once = _fixed(body, BOTH)
    assert once == textwrap.dedent(
        """\
        def main(dataset):
            loader = DataLoader(  # noqa: ACL102
                dataset,
                batch_size=64,
                shuffle=True,
                drop_last=True,
                num_workers=min(8, os.cpu_count() or 1),
            )
        """
    )
    assert "pin_memory" not in once
    assert fix(HEADER + once, BOTH) == HEADER + once


def test_a_noqa_on_a_with_header_stays_on_the_reported_line() -> None:
    body = (
        "with DataLoader(dataset_a, batch_size=64, shuffle=True, drop_last=True) as loader:"
        "  # noqa: ACL102\n"
        "    pass\n"
    )
    once = _fixed(body, BOTH)
    assert once.splitlines()[0] == "with DataLoader(  # noqa: ACL102"
    assert "pin_memory" not in once
    assert fix(HEADER + once, BOTH) == HEADER + once


def test_other_trailing_comments_follow_the_closing_bracket_as_black_puts_them() -> None:
    body = "loader = DataLoader(dataset_a, batch_size=64, shuffle=True, drop_last=True)  # keep\n"
    once = _fixed(body, PIN)
    assert once.splitlines()[0] == "loader = DataLoader("
    assert once.splitlines()[-1] == ")  # keep"


def test_a_layout_that_would_unsuppress_a_finding_is_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fixer's safety net: if the layout changed what is reported (a comment it
    does not know as line-bound moved off its line), the fixed line stays long."""
    import accel_lint.layout as layout

    monkeypatch.setattr(layout, "_LINE_BOUND", re.compile(r"(?!)"))  # matches nothing
    body = (
        "loader = DataLoader(dataset_a, batch_size=64, shuffle=True, drop_last=True)"
        "  # noqa: ACL102\n"
    )
    once = _fixed(body, BOTH)
    assert once == body.replace(
        "drop_last=True)", "drop_last=True, num_workers=min(8, os.cpu_count() or 1))"
    )
    assert fix(HEADER + once, BOTH) == HEADER + once


def test_a_fixed_fixture_has_no_line_past_the_files_width(tmp_path: Path) -> None:
    """`fix --apply --unsafe-fixes fixtures/cnn_bn/train.py` wrote lines of 103 and 99
    columns (a tuple of two `.to(...)` calls, each given `non_blocking=True`) where the
    original's longest is 97: the tuple is parenthesized, one element per line, as
    black and ruff format write it."""
    from accel_lint.layout import width_for
    from tests.support import ROOT, cli

    original = (ROOT / "fixtures" / "cnn_bn" / "train.py").read_text(encoding="utf-8")
    (tmp_path / "train.py").write_text(original, encoding="utf-8")
    ran = cli("fix", "--apply", "--unsafe-fixes", "--isolated", "--no-cache", "train.py",
              cwd=tmp_path)  # fmt: skip
    assert ran.returncode in (0, 1), ran.stderr
    fixed = (tmp_path / "train.py").read_text(encoding="utf-8")
    assert max(map(len, fixed.splitlines())) <= width_for(original) == 97
    assert (
        "        images, labels = (\n"
        "            images.to(device, non_blocking=True),\n"
        "            labels.to(device, non_blocking=True),\n"
        "        )\n"
    ) in fixed


def test_the_call_that_ends_a_long_line_is_split_at_its_bracket() -> None:
    """Black's right-hand split, where the line holds brackets side by side and the last
    is a call: what precedes its `(` stays, its arguments go on the next line."""
    import libcst as cst

    from accel_lint.layout import laid_out

    original = "def f():\n    total = prepare(alpha) + combine(first)\n"
    fixed = (
        "def f():\n"
        "    total = prepare(alpha) + combine(first, second_argument, third_argument, "
        "fourth_argument)\n"
    )
    assert laid_out(original, cst.parse_module(fixed)).code == (
        "def f():\n"
        "    total = prepare(alpha) + combine(\n"
        "        first, second_argument, third_argument, fourth_argument\n"
        "    )\n"
    )
