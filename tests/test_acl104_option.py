"""ACL104's fix for a worker count the command line sets: the fixed script still
runs with `--workers 0` (DataLoader rejects persistent workers without workers)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import fix, settings_for

SCRIPT = """\
import argparse

import torch
from torch.utils.data import DataLoader, Dataset


class Noise(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)
        return torch.randn(3, generator=generator), torch.randn(1, generator=generator)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    loader = DataLoader(Noise(), batch_size=16, num_workers=args.workers)
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    print("trained")


if __name__ == "__main__":
    main()
"""


def test_the_fix_follows_an_option_count_and_runs_with_no_workers(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    fixed = fix(SCRIPT, settings_for(("ACL104",), unsafe=True))
    assert "num_workers=args.workers,\n        persistent_workers=args.workers > 0,\n" in fixed
    script = tmp_path / "train.py"
    script.write_text(fixed, encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, str(script), "--workers", "0", "--epochs", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "trained"
    # what the old fix wrote fails there
    script.write_text(fixed.replace("args.workers > 0", "True"), encoding="utf-8")
    broken = subprocess.run(
        [sys.executable, str(script), "--workers", "0", "--epochs", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert broken.returncode != 0
    assert "persistent_workers option needs num_workers > 0" in broken.stderr
