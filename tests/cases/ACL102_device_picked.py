# ACL102: the script picks its device with `torch.cuda.is_available()`; the fix writes
# that same test, so a run on a machine without a GPU neither pins nor warns.
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

PIN_MEMORY = False


def train(model, device, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()  # ACL207
        if batch_idx % 100 == 0:
            print(f"epoch {epoch} [{batch_idx}] loss {loss.item():.4f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cuda", action="store_true")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")

    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train_set = datasets.MNIST("data", train=True, download=True, transform=tf)
    test_set = datasets.MNIST("data", train=False, transform=tf)
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=2)  # ACL102 ACL104
    test_loader = DataLoader(test_set, batch_size=1000, num_workers=2, pin_memory=False)  # ACL102
    extra_loader = DataLoader(test_set, batch_size=10, num_workers=2, pin_memory=PIN_MEMORY)  # ACL102

    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 10), nn.LogSoftmax(dim=1)).to(device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    for epoch in range(1, args.epochs + 1):
        train(model, device, train_loader, optimizer, epoch)
    return test_loader, extra_loader


if __name__ == "__main__":
    main()
