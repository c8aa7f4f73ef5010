# ACL314: a float16 autocast decorating a trained `forward` counts like the `with`
# form; and a loss built after the autocast block from the outputs computed inside
# it still comes from the block.
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)

    @torch.autocast("cuda", dtype=torch.float16)
    def forward(self, x):
        return self.fc(x)


def train_epoch(model, loader, optimizer, criterion):
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.float16):
            out = model(x)
        loss = criterion(out.float(), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    torch.set_float32_matmul_precision("high")
    model = Net().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    for step in range(10):
        x = torch.randn(8, 64, device="cuda")
        loss = model(x).float().pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
