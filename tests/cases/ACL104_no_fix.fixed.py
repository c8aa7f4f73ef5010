# ACL104 without a fix: the script changes the dataset between epochs, which
# persistent workers would never see; worker counts that are not statically > 0.
import torch
from torch.utils.data import DataLoader


class Curriculum(torch.utils.data.Dataset):
    def __init__(self):
        self.level = 0

    def __len__(self):
        return 256

    def __getitem__(self, index):
        return torch.full((4,), float(self.level + index))

    def set_level(self, level):
        self.level = level


def train(model, optimizer, workers):
    curriculum = Curriculum()
    loader = DataLoader(curriculum, batch_size=32, num_workers=4)
    for epoch in range(10):
        curriculum.set_level(epoch // 3)
        for x in loader:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()

    # Not flagged: the worker count is not known here.
    unknown = DataLoader(Curriculum(), batch_size=32, num_workers=workers)
    for epoch in range(10):
        for x in unknown:
            pass


def mine_negatives(loader, model):
    loader.dataset.set_level(int(model(torch.zeros(4)).sum()))
    for x in loader:
        pass


def hard_negatives(model):
    loader = DataLoader(Curriculum(), batch_size=32, num_workers=4)
    for epoch in range(10):
        mine_negatives(loader, model)
