"""Training with a validation pass every few steps, run with autograd on.

What accel-lint finds here: the evaluation function records an autograd graph
for every validation batch it never backpropagates (ACL311): time spent saving
activations, and memory held until each batch's graph is freed.
"""

import argparse

import torch
from torch import nn

SIZES = {
    "small": {"width": 64, "batch": 32, "val_batches": 4},
    "full": {"width": 4096, "batch": 512, "val_batches": 16},
}


def evaluate(model, batches):
    model.eval()
    total = 0.0
    for x, y in batches:
        total += nn.functional.cross_entropy(model(x), y).item()
    model.train()
    return total / len(batches)


def main():
    parser = argparse.ArgumentParser(description="training with frequent validation")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--eval-every", type=int, default=2)
    parser.add_argument("--no-cuda", action="store_true", help="train on the CPU")
    args = parser.parse_args()
    size = SIZES[args.size]
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")

    torch.manual_seed(0)
    width, batch = size["width"], size["batch"]
    model = nn.Sequential(
        nn.Linear(width, width), nn.GELU(), nn.Linear(width, width), nn.GELU(), nn.Linear(width, 10)
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    generator = torch.Generator(device=device).manual_seed(1)
    validation = [
        (
            torch.randn(batch, width, device=device, generator=generator),
            torch.randint(0, 10, (batch,), device=device, generator=generator),
        )
        for _ in range(size["val_batches"])
    ]
    for step in range(args.steps):
        x = torch.randn(batch, width, device=device)
        y = torch.randint(0, 10, (batch,), device=device)
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        if step % args.eval_every == 0:
            print(f"step {step}: validation loss {evaluate(model, validation):.4f}")


if __name__ == "__main__":
    main()
