# ACL404: set_epoch() reached through any alias of the sampler counts.
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))


def step(x, y):
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()


# should not flag: set_epoch on the sampler variable, after the loop header
direct = DistributedSampler(dataset)
direct_loader = DataLoader(dataset, sampler=direct, num_workers=2)  # ACL104 ACL106
for epoch in range(3):
    for x, y in direct_loader:
        step(x, y)
    direct.set_epoch(epoch + 1)

# through the loader
via_loader = DataLoader(dataset, sampler=DistributedSampler(dataset), num_workers=2)  # ACL104 ACL106
for epoch in range(3):
    via_loader.sampler.set_epoch(epoch)
    for x, y in via_loader:
        step(x, y)


# through a `sampler=` parameter
def fit(loader, sampler, epochs):
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            step(x, y)


passed = DistributedSampler(dataset)
fit(DataLoader(dataset, sampler=passed, num_workers=2), sampler=passed, epochs=3)  # ACL104 ACL106


# through the attributes it was stored in
class Trainer:
    def __init__(self, train_data, sampler):
        self.train_data = train_data
        self.sampler = sampler

    def run_epoch(self):
        for x, y in self.train_data:
            step(x, y)

    def train(self, epochs):
        for epoch in range(epochs):
            self.sampler.set_epoch(epoch)
            self.run_epoch()


class LoaderOnly:
    def __init__(self, train_data):
        self.train_data = train_data

    def train(self, epochs):
        for epoch in range(epochs):
            self.train_data.sampler.set_epoch(epoch)
            for x, y in self.train_data:
                step(x, y)


stored = DistributedSampler(dataset)
Trainer(DataLoader(dataset, sampler=stored, num_workers=2), stored).train(3)  # ACL104 ACL106
LoaderOnly(DataLoader(dataset, sampler=DistributedSampler(dataset), num_workers=2)).train(3)  # ACL104 ACL106
renamed = DistributedSampler(dataset)
alias = renamed
renamed_loader = DataLoader(dataset, sampler=renamed, num_workers=2)  # ACL104 ACL106
for epoch in range(3):
    alias.set_epoch(epoch)
    for x, y in renamed_loader:
        step(x, y)

# should flag: another sampler's set_epoch does not count
train_sampler = DistributedSampler(dataset)
extra_sampler = DistributedSampler(dataset)  # ACL404
train_loader = DataLoader(dataset, sampler=train_sampler, num_workers=2)  # ACL104 ACL106
extra_loader = DataLoader(dataset, sampler=extra_sampler, num_workers=2)  # ACL104 ACL106
for epoch in range(3):
    train_sampler.set_epoch(epoch)
    for x, y in train_loader:
        step(x, y)
    for x, y in extra_loader:
        step(x, y)
