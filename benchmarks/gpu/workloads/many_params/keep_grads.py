"""Training a model of many small tensors that keeps its gradient tensors alive.

What accel-lint finds here: zero_grad(set_to_none=False) writes zeros into
every gradient instead of dropping them (ACL302), and Adam runs without its
fused CUDA kernel (ACL309, off by default: selected explicitly).
"""

import argparse

import torch
from model import SIZES, make_model


def main():
    parser = argparse.ArgumentParser(description="many parameter tensors, gradients kept")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--no-cuda", action="store_true", help="train on the CPU")
    args = parser.parse_args()
    size = SIZES[args.size]
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")

    torch.manual_seed(0)
    model = make_model(size["depth"], size["width"]).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        x = torch.randn(size["batch"], size["width"], device=device)
        target = x.sum(dim=1, keepdim=True)
        optimizer.zero_grad(set_to_none=False)
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
