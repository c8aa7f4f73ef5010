# ACL312: a GradScaler kept around bfloat16 autocast; the fix rewrites every use.
import torch
from torch import nn
from torch.amp import GradScaler

AMP_DTYPE = torch.bfloat16
model = nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
scaler = GradScaler("cuda", enabled=torch.cuda.is_available())  # ACL312


def train(batches, accum):
    for i, (x, y) in enumerate(batches):
        with torch.autocast("cuda", dtype=AMP_DTYPE):
            loss = nn.functional.mse_loss(model(x), y)
        scaler.scale(loss / accum).backward()
        if (i + 1) % accum == 0:
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)


@torch.no_grad()
def evaluate(x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return model(x)


def save(path):
    checkpoint = {"model": model.state_dict(), "optimizer": opt.state_dict()}
    checkpoint["scaler"] = scaler.state_dict()
    torch.save(checkpoint, path)


def load(path):
    checkpoint = torch.load(path, map_location="cpu")
    model.load_state_dict(checkpoint["model"])
    if "scaler" in checkpoint:
        scaler.load_state_dict(checkpoint["scaler"])
