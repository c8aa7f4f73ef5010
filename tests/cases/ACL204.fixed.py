# TorchScript used for speed in a training script: the scripted model, a traced
# loss, a scripted activation (decorator, any import spelling).
import torch
import torch.jit as jit
from torch import nn
from torch.jit import trace


@torch.jit.script
def fused_gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))


@jit.script
def bias_dropout(x, bias: torch.Tensor, p: float):
    return torch.nn.functional.dropout(x + bias, p)


def train(model, loader, optimizer, use_script):
    if use_script:
        model = torch.jit.script(model)
    example = next(iter(loader))
    criterion = trace(nn.MSELoss(), (example, example))
    for x in loader:
        loss = criterion(model(x), x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
