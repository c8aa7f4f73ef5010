# ACL212: tensors created in one dtype, then cast to another.
import numpy as np
import torch


def build(n, x, values):
    mask = torch.zeros(n, n, dtype=torch.bool)
    ones = torch.ones(n, dtype=torch.float16)
    positions = torch.arange(n, dtype=torch.float32)
    steps = torch.arange(0, n, dtype=torch.float16)
    ids = torch.tensor([1, 2, 3], dtype=torch.int64)
    eye = torch.eye(n, dtype=torch.bfloat16)
    fill = torch.full((n,), 7, dtype=torch.float64)
    like_x = torch.zeros(n, dtype=x.dtype)
    table = torch.tensor(np.asarray(values), dtype=torch.float32)
    # reported without a fix: the values would differ
    noise = torch.randn(n).half()
    grid = torch.linspace(0, 1, n).double()
    scaled = torch.tensor([0.1, 0.2]).double()
    halfstep = torch.arange(0, 1, 0.25).half()
    leaf = torch.zeros(n, requires_grad=True).half()
    return (mask, ones, positions, steps, ids, eye, fill, like_x, table)


# Not flagged: a dtype= already given, a cast that is not right after the creation,
# `.float()` of a tensor that is float32 already, a move to a device, not a creator.
def fine(n, x, device):
    a = torch.zeros(n, dtype=torch.float32).half()
    b = torch.zeros(n).view(-1, 1).half()
    c = torch.zeros(n).float()
    d = torch.randn(n).to(torch.float32)
    e = torch.zeros(n).to(device)
    f = torch.zeros_like(x).half()
    g = torch.from_numpy(np.zeros(3)).float()
    return a, b, c, d, e, f, g


# The dtype is spelled as the file imports torch.
def renamed(n):
    from torch import ones

    return ones(n, dtype=torch.float16)
