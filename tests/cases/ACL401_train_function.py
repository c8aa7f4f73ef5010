# ACL401: the model is built and wrapped under `if __name__ == "__main__":`, and a
# `train()` function it calls once builds the training loader and runs the epoch loop
# (the shape of Tianxiaomo/pytorch-YOLOv4's train.py). The sampler, its `set_epoch` and
# the per-process batch go into `train()`, which reads the number of processes from the
# process group; its saves and prints are left to rank 0.
import argparse
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def train(model, config, device, epochs=5):
    train_dataset = TensorDataset(torch.randn(128, 20), torch.randint(0, 4, (128,)))
    val_dataset = TensorDataset(torch.randn(32, 20), torch.randint(0, 4, (32,)))
    train_loader = DataLoader(train_dataset, batch_size=config.batch // config.subdivisions, shuffle=True,  # ACL102
                              drop_last=True)
    val_loader = DataLoader(val_dataset, batch_size=16)  # ACL102
    optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate)  # ACL309
    criterion = nn.CrossEntropyLoss()
    model.train()
    for epoch in range(epochs):
        epoch_loss = 0.0
        for i, (images, labels) in enumerate(train_loader):
            loss = criterion(model(images.to(device)), labels.to(device))
            loss.backward()
            epoch_loss += loss.item()  # ACL308
            optimizer.step()  # ACL207
            model.zero_grad()
        model.eval()
        with torch.no_grad():
            correct = sum((model(x.to(device)).argmax(1) == y.to(device)).sum().item() for x, y in val_loader)
        model.train()
        print(f"epoch {epoch + 1}: loss {epoch_loss / len(train_loader):.4f}, val acc {correct / len(val_dataset):.3f}")
        os.makedirs(config.checkpoints, exist_ok=True)
        save_path = os.path.join(config.checkpoints, f"model{epoch + 1}.pth")
        if isinstance(model, torch.nn.DataParallel):
            torch.save(model.module.state_dict(), save_path)
        else:
            torch.save(model.state_dict(), save_path)


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--subdivisions", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--checkpoints", default="checkpoints")
    return parser.parse_args()


if __name__ == "__main__":
    cfg = get_args()
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4))

    if torch.cuda.device_count() > 1:
        model = torch.nn.DataParallel(model)  # ACL401
    model.to(device=device)

    train(model=model, config=cfg, device=device, epochs=cfg.epochs)
