# ACL401: a segmentation-style trainer counted in iterations (the shape of meetps/pytorch-semseg's
# train.py): `train(cfg, ...)` wraps the model with `device_ids=range(device_count())`, and a
# `while i <= train_iters` loop passes over the loader again and again until the iteration
# budget is spent. The loop counts no epochs, so the migration counts its passes (`epoch`)
# for `set_epoch`. The best model is saved after validation, on the last iteration.
import argparse
import os

import torch
import torch.nn as nn
from torch.utils import data


def train(cfg):
    torch.manual_seed(1337)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    t_loader = data.TensorDataset(torch.randn(96, 12), torch.randint(0, 3, (96,)))
    v_loader = data.TensorDataset(torch.randn(32, 12), torch.randint(0, 3, (32,)))
    trainloader = data.DataLoader(  # ACL102
        t_loader,
        batch_size=cfg["batch_size"],
        shuffle=True,
    )
    valloader = data.DataLoader(v_loader, batch_size=cfg["batch_size"])  # ACL102

    model = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 3)).to(device)
    model = torch.nn.DataParallel(model, device_ids=range(torch.cuda.device_count()))  # ACL401

    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()

    best = -1.0
    i = 0
    flag = True
    while i <= cfg["train_iters"] and flag:
        for (images, labels) in trainloader:
            i += 1
            model.train()
            images = images.to(device)
            labels = labels.to(device)

            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()  # ACL207

            if (i + 1) % cfg["print_interval"] == 0:
                print("Iter [{:d}/{:d}]  Loss: {:.4f}".format(i + 1, cfg["train_iters"], loss.item()))

            if (i + 1) == cfg["train_iters"]:
                model.eval()
                correct = 0
                with torch.no_grad():
                    for images_val, labels_val in valloader:
                        outputs = model(images_val.to(device))
                        correct += (outputs.argmax(1) == labels_val.to(device)).sum().item()
                score = correct / len(v_loader)
                print("Iter %d accuracy: %.4f" % (i + 1, score))
                if score >= best:
                    best = score
                    state = {"iter": i + 1, "model_state": model.state_dict()}  # ACL411
                    os.makedirs(cfg["out"], exist_ok=True)
                    torch.save(state, os.path.join(cfg["out"], "best_model.pkl"))
                flag = False
                break


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="config")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    train({"train_iters": args.iters, "batch_size": args.batch_size, "print_interval": 5, "out": "runs"})
