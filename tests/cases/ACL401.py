# ACL401: a pytorch/examples-style script in main(): the batch loop in train(),
# evaluation and checkpointing in helpers, an isinstance check on the wrapper.
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 64)
        self.fc2 = nn.Linear(64, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)  # ACL103 ACL103
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()  # ACL207
        if batch_idx % args.log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx}]\tLoss: {loss.item():.6f}")


def test(model, device, test_loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)  # ACL103 ACL103
            correct += (model(data).argmax(dim=1) == target).sum().item()
    print(f"Test accuracy: {correct / len(test_loader.dataset):.3f}")


def save_checkpoint(model, path):
    state = model.module.state_dict() if isinstance(model, nn.DataParallel) else model.state_dict()
    torch.save(state, path)


def main():
    """Train on every GPU of this machine."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--log-interval", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(1)

    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    x, y = torch.randn(512, 20), torch.randint(0, 3, (512,))
    train_set = TensorDataset(x, y)
    test_set = TensorDataset(x[:128], y[:128])
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=2, pin_memory=True)  # ACL104 ACL106
    test_loader = DataLoader(test_set, batch_size=128, num_workers=2, pin_memory=True)  # ACL104 ACL106

    model = Net().to(device)
    model = nn.DataParallel(model)  # ACL401
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        save_checkpoint(model, f"epoch{epoch}.pt")


if __name__ == "__main__":
    main()
