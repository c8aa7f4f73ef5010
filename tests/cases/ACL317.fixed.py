# ACL317 (off by default): determinism switched on unconditionally in a training script.
import argparse
import random

import torch
import torch.backends.cudnn as cudnn


def seed_everything(seed):
    random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--deterministic", action="store_true")
    args = parser.parse_args()
    seed_everything(0)
    cudnn.deterministic = True
    if args.deterministic:  # a choice: not reported
        torch.backends.cudnn.deterministic = True
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in [(torch.randn(4, 8), torch.randn(4, 1))] * 10:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def unused_helper():
    torch.use_deterministic_algorithms(True)


if __name__ == "__main__":
    main()
