# ACL314: float16 CUDA autocast around a backpropagated loss, no GradScaler.
import torch
from torch import nn

model = nn.Linear(8, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
device = torch.device("cuda")


def train(batches, accum):
    for x, y in batches:
        with torch.autocast("cuda"):
            out = model(x)
            loss = nn.functional.mse_loss(out, y)
        (loss / accum).backward()
        opt.step()


def train_on(batches, device):
    for x, y in batches:
        with torch.autocast(device_type=device.type, dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()


# should not flag: bfloat16, the CPU, an evaluation, autocast switched off
def others(x, y):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        a = model(x).sum()
    a.backward()
    with torch.autocast("cpu"):
        b = model(x).sum()
    b.backward()
    with torch.no_grad(), torch.autocast("cuda"):
        prediction = model(x)
    with torch.autocast("cuda", enabled=False):
        c = model(x).sum()
    c.backward()
    return prediction
