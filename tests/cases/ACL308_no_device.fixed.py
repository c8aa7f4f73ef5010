# A script that runs on the host only: its syncs wait for nothing.
import torch
import torch.nn.functional as F

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())


def train(loader):
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(loss.item())
