# ACL401: a segmentation-style trainer counted in iterations (the shape of meetps/pytorch-semseg's
# train.py): `train(cfg, ...)` wraps the model with `device_ids=range(device_count())`, and a
# `while i <= train_iters` loop passes over the loader again and again until the iteration
# budget is spent. The loop counts no epochs, so the migration counts its passes (`epoch`)
# for `set_epoch`. The best model is saved after validation, on the last iteration.
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils import data


def train(cfg):
    torch.manual_seed(1337)

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

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    t_loader = data.TensorDataset(torch.randn(96, 12), torch.randint(0, 3, (96,)))
    v_loader = data.TensorDataset(torch.randn(32, 12), torch.randint(0, 3, (32,)))
    trainsampler = data.DistributedSampler(t_loader, shuffle=True)
    trainloader = data.DataLoader(
        t_loader,
        batch_size=cfg["batch_size"] // world_size,
        sampler=trainsampler,
    )
    valloader = data.DataLoader(v_loader, batch_size=cfg["batch_size"])

    model = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 3)).to(device)
    model = nn.parallel.DistributedDataParallel(
        model, device_ids=[local_rank] if torch.cuda.is_available() else None
    )

    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()

    best = -1.0
    i = 0
    flag = True
    epoch = 0
    while i <= cfg["train_iters"] and flag:
        trainsampler.set_epoch(epoch)
        epoch += 1
        for (images, labels) in trainloader:
            i += 1
            model.train()
            images = images.to(device)
            labels = labels.to(device)

            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()

            if (i + 1) % cfg["print_interval"] == 0:
                if rank == 0:
                    print(
                        "Iter [{:d}/{:d}]  Loss: {:.4f}".format(i + 1, cfg["train_iters"], loss.item())
                    )

            if (i + 1) == cfg["train_iters"]:
                model.eval()
                correct = 0
                with torch.no_grad():
                    for images_val, labels_val in valloader:
                        outputs = model(images_val.to(device))
                        correct += (outputs.argmax(1) == labels_val.to(device)).sum().item()
                score = correct / len(v_loader)
                if rank == 0:
                    print("Iter %d accuracy: %.4f" % (i + 1, score))
                if score >= best:
                    best = score
                    state = {"iter": i + 1, "model_state": model.state_dict()}
                    os.makedirs(cfg["out"], exist_ok=True)
                    if rank == 0:
                        torch.save(state, os.path.join(cfg["out"], "best_model.pkl"))
                flag = False
                break
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="config")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    train({"train_iters": args.iters, "batch_size": args.batch_size, "print_interval": 5, "out": "runs"})
