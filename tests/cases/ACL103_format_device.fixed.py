# ACL103: a CUDA device string built by `.format(...)` or `%` counts like an f-string:
# the batches moved to it come from a loader that pins memory.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader


def train(rank, data):
    torch.set_float32_matmul_precision("high")
    device = torch.device("cuda:{:d}".format(rank))
    loader = DataLoader(data, batch_size=32, shuffle=True, num_workers=4, pin_memory=True)
    model = nn.Linear(10, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = (model(x) - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def evaluate(rank, data, model):
    device = torch.device("cuda:%d" % rank)
    loader = DataLoader(data, batch_size=64, num_workers=4, pin_memory=True)
    with torch.no_grad():
        for x, _ in loader:
            print(model(x.to(device, non_blocking=True)).mean().item())
