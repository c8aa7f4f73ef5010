from __future__ import annotations

import fcntl
from collections.abc import Iterator

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        help="rewrite expected outputs (fixtures' findings and fixed files, case snapshots)",
    )


@pytest.fixture
def update_snapshots(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-snapshots"))


@pytest.fixture(autouse=True)
def _timing_runs_alone(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """A test marked `timing` asserts a measured speed-up, which a busy 2-core machine
    erases: under pytest-xdist it waits for the other workers' tests and runs alone.
    Every test holds a shared lock on a file the workers share, a `timing` test an
    exclusive one; a turnstile lock keeps new tests from starving a waiting one."""
    # the workers' base temporaries are siblings: their parent is the session's own
    folder = tmp_path_factory.getbasetemp().parent
    alone = request.node.get_closest_marker("timing") is not None
    with (
        open(folder / "accel-lint-turnstile.lock", "a") as turnstile,
        open(folder / "accel-lint-timing.lock", "a") as room,
    ):
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
