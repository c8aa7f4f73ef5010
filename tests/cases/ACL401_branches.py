# ACL401: one model wrapped in the two branches of an `if` (from pretrained weights, or
# from scratch): every path wraps it once, so both calls are one wrap and
# the migration rewrites each in its branch. The script leaves `main()` early when it
# only evaluates: that exit destroys the process group too. Its epochs are counted by
# a `while` loop (`epoch += 1` first), so `set_epoch` follows the count.
import argparse
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser(description="classifier, from scratch or pretrained")
parser.add_argument("--epochs", default=2, type=int)
parser.add_argument("--batch-size", default=32, type=int)
parser.add_argument("--pretrained", default="")
parser.add_argument("--evaluate", action="store_true")
parser.add_argument("--out", default="runs")


def evaluate(model, loader, device):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x.to(device)).argmax(1) == y.to(device)).sum().item()  # ACL103 ACL103
    return correct / len(loader.dataset)


def main():
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    train_set = TensorDataset(torch.randn(256, 16), torch.randint(0, 4, (256,)))
    val_set = TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,)))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=args.batch_size, pin_memory=True)

    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    if args.pretrained:
        print(f"=> starting from {args.pretrained}")
        model.load_state_dict(torch.load(args.pretrained, map_location="cpu"))
        model = nn.DataParallel(model).to(device)  # ACL401
    else:
        print("=> starting from scratch")
        model = nn.DataParallel(model).to(device)  # ACL401
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()

    if args.evaluate:
        print(f"accuracy {evaluate(model, val_loader, device):.3f}")
        return

    epoch = 0
    while epoch < args.epochs:
        epoch += 1
        model.train()
        for x, y in train_loader:
            loss = criterion(model(x.to(device)), y.to(device))  # ACL103 ACL103
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()  # ACL207
        print(f"epoch {epoch} loss {loss.item():.4f} acc {evaluate(model, val_loader, device):.3f}")
    os.makedirs(args.out, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(args.out, "model.pt"))  # ACL411


if __name__ == "__main__":
    main()
