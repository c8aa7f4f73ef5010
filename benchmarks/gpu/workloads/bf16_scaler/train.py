"""A small transformer encoder trained under bfloat16 autocast with a GradScaler.

What accel-lint finds here: the GradScaler (ACL312). bfloat16 has float32's
exponent range, so there is nothing to scale; the scaler only adds its
inf/NaN checks, an unscale of every gradient and a host sync per step.
"""

import argparse

import torch
from torch import nn

SIZES = {
    "small": {"layers": 2, "width": 32, "heads": 2, "tokens": 16, "batch": 8},
    "full": {"layers": 8, "width": 512, "heads": 8, "tokens": 256, "batch": 32},
}
VOCAB = 1024


class Encoder(nn.Module):
    def __init__(self, layers, width, heads):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.out = nn.Linear(width, VOCAB)

    def forward(self, tokens):
        return self.out(self.encoder(self.embed(tokens)))


def main():
    parser = argparse.ArgumentParser(description="bf16 autocast with a GradScaler")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--no-cuda", action="store_true", help="train on the CPU")
    args = parser.parse_args()
    size = SIZES[args.size]
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")

    torch.manual_seed(0)
    model = Encoder(size["layers"], size["width"], size["heads"]).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    scaler = torch.amp.GradScaler(device.type)
    shape = (size["batch"], size["tokens"])
    for step in range(args.steps):
        tokens = torch.randint(0, VOCAB, shape, device=device)
        optimizer.zero_grad()
        with torch.autocast(device.type, dtype=torch.bfloat16):
            logits = model(tokens)
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten())
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        if step % 25 == 0:
            print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
