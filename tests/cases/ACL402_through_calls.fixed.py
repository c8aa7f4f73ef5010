# ACL402 follows the wrapped model into the functions of the file it is passed to.
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


def step(net, batch):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return net(batch)


def train(loader, model, optimizer):
    for batch in loader:
        optimizer.zero_grad()
        step(model, batch).sum().backward()
        optimizer.step()


def evaluate(model, loader):
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        return [model(batch) for batch in loader]


def unrelated(model, batch):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return model(batch)  # never given the DataParallel model


def main(loader):
    model = nn.DataParallel(Net()).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train(loader, model, optimizer)
    evaluate(model=model, loader=loader)
    unrelated(Net(), next(iter(loader)))
