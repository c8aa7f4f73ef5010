# ACL104: `from utils import *` binds names nobody here can list, so they are unknown,
# not absent: `range` stays the builtin, `DataLoader` imported afterwards still
# resolves, and the loader read in the epoch loop is reported.
from utils import *

import torch
import torch.nn as nn
from torch.utils.data import DataLoader


def main():
    torch.set_float32_matmul_precision("high")
    dataset = build_dataset("data/train")
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4, pin_memory=True)  # ACL104
    model = nn.Linear(10, 1).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    for epoch in range(10):
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = (model(x) - y).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        save_checkpoint(model, epoch)


if __name__ == "__main__":
    main()
