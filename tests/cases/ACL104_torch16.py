# target-torch: 1.6
# ACL104 on torch 1.6: `persistent_workers` does not exist yet, so no fix.
import torch
from torch.utils.data import DataLoader


def train(model, optimizer, dataset):
    loader = DataLoader(dataset, batch_size=32, num_workers=4)  # ACL104
    for epoch in range(10):
        for x, y in loader:
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
