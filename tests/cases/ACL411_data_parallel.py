# ACL411: DataParallel prefixes the keys as DDP does. A trainer that wraps in
# `__init__` saves `self.model.state_dict()` from another method; a script that wraps
# only on several GPUs (pytorch-cifar) gets no fix: `net.module` may not exist.
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model):
        self.model = nn.DataParallel(model.cuda())  # ACL401

    def save(self, path):
        state = {"model": self.model.state_dict()}  # ACL411
        torch.save(state, path)


device = "cuda" if torch.cuda.is_available() else "cpu"
net = nn.Linear(8, 2).to(device)
if device == "cuda":
    net = torch.nn.DataParallel(net)  # ACL401
torch.save({"net": net.state_dict(), "acc": 0.9}, "ckpt.pth")  # ACL411
