# ACL310: micro-batches taken with `for part in batch.chunk(k)`: the optimizer steps
# once per batch, after k backward passes whose losses are not divided by k.
import torch
import torch.nn as nn


def train(loader, micro_batches=4):
    torch.set_float32_matmul_precision("high")
    model = nn.Linear(64, 10).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        for part, target in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
            loss = nn.functional.cross_entropy(model(part), target)
            loss.backward()  # ACL310
        optimizer.step()
        optimizer.zero_grad()


def train_scaled(loader, micro_batches=4):
    model = nn.Linear(64, 10).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    for x, y in loader:
        for part in x.cuda(non_blocking=True).chunk(micro_batches):
            loss = model(part).pow(2).mean() / micro_batches
            loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return y
