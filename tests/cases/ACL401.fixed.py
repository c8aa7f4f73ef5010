# ACL401: a pytorch/examples-style script in main(): the batch loop in train(),
# evaluation and checkpointing in helpers, an isinstance check on the wrapper.
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


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
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            if dist.get_rank() == 0:
                print(f"Train Epoch: {epoch} [{batch_idx}]\tLoss: {loss.item():.6f}")


def test(model, device, test_loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            correct += (model(data).argmax(dim=1) == target).sum().item()
    if dist.get_rank() == 0:
        print(f"Test accuracy: {correct / len(test_loader.dataset):.3f}")


def save_checkpoint(model, path):
    state = model.module.state_dict() if isinstance(model, nn.parallel.DistributedDataParallel) else model.state_dict()
    if dist.get_rank() == 0:
        torch.save(state, path)


def main():
    """Train on every GPU of this machine."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--log-interval", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(1)

    # set by torchrun (one process per device); plain `python` runs one process
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    rank = int(os.environ.get("RANK", 0))
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "0")  # torchrun sets the real one
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    dist.init_process_group(
        "nccl" if torch.cuda.is_available() else "gloo", rank=rank, world_size=world_size
    )

    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    x, y = torch.randn(512, 20), torch.randint(0, 3, (512,))
    train_set = TensorDataset(x, y)
    test_set = TensorDataset(x[:128], y[:128])
    train_sampler = DistributedSampler(train_set, shuffle=True)
    train_loader = DataLoader(
        train_set,
        batch_size=args.batch_size // world_size,
        sampler=train_sampler,
        num_workers=2,
        pin_memory=True,
    )
    test_loader = DataLoader(test_set, batch_size=128, num_workers=2, pin_memory=True)

    model = Net().to(device)
    model = nn.parallel.DistributedDataParallel(
        model, device_ids=[local_rank] if torch.cuda.is_available() else None
    )
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    for epoch in range(1, args.epochs + 1):
        train_sampler.set_epoch(epoch)
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        save_checkpoint(model, f"epoch{epoch}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
