# ACL401 without a fix: a runner wraps its one model in `train()` and again in `sample()`:
# one model, wrapped in two functions (not "2 models"); the migration rewrites one wrap.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Runner:
    def __init__(self):
        self.model = nn.Linear(4, 1).cuda()
        self.loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=16)

    def train(self):
        model = nn.DataParallel(self.model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            for (x,) in self.loader:
                loss = model(x.cuda()).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()

    def sample(self):
        model = nn.DataParallel(self.model)
        return model(torch.randn(4, 4).cuda())
