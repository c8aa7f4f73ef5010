"""The fixed scripts `verify` needs (the runs', the report's diffs), each computed
once whichever thread asks first: the prefetch while the parent would only wait,
a run, or the diffs."""

from __future__ import annotations

import threading

import pytest

from accel_lint.cli.verify import FixedTexts, FixFailed

CODES = frozenset({"ACL101", "ACL201"})


def test_a_known_text_is_not_computed_again_and_a_subset_is_read_within_the_codes() -> None:
    calls: list[frozenset[str]] = []

    def fix_with(subset: frozenset[str]) -> str:
        calls.append(subset)
        return "fixed by " + "+".join(sorted(subset))

    texts = FixedTexts(fix_with, CODES, {CODES: "all", frozenset(): "original"})
    assert texts(CODES) == "all"
    assert texts(frozenset({"ACL101", "ACL999"})) == "fixed by ACL101"
    assert texts(frozenset({"ACL101"})) == "fixed by ACL101"
    assert texts(frozenset({"ACL999"})) == "original"
    assert calls == [frozenset({"ACL101"})]


def test_a_thread_asking_for_a_text_being_computed_waits_for_it() -> None:
    started, release = threading.Event(), threading.Event()
    calls: list[frozenset[str]] = []

    def fix_with(subset: frozenset[str]) -> str:
        calls.append(subset)
        started.set()
        release.wait()
        return "slow"

    texts = FixedTexts(fix_with, CODES, {})
    subset = frozenset({"ACL201"})
    texts.prefetch([subset])
    started.wait()
    got: list[str] = []
    asker = threading.Thread(target=lambda: got.append(texts(subset)))
    asker.start()
    release.set()
    asker.join()
    assert got == ["slow"] and calls == [subset]


def test_a_failed_fix_is_raised_to_every_thread_that_asks() -> None:
    calls: list[frozenset[str]] = []

    def fix_with(subset: frozenset[str]) -> str:
        calls.append(subset)
        raise FixFailed("train.py: the fix of ACL201 does not parse")

    texts = FixedTexts(fix_with, CODES, {})
    # the prefetch swallows the failure; whoever asks, before or after it, is told
    texts.prefetch([frozenset({"ACL201"})])
    for _ in range(2):
        with pytest.raises(FixFailed, match="does not parse"):
            texts(frozenset({"ACL201"}))
    assert calls == [frozenset({"ACL201"})]
