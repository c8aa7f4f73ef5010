# ACL212: tensors created in one dtype, then cast to another.
import numpy as np
import torch


def build(n, x, values):
    mask = torch.zeros(n, n, dtype=torch.bool)
    ones = torch.ones(n, dtype=torch.float16)
    positions = torch.arange(n, dtype=torch.float32)
    steps = torch.arange(0, n, dtype=torch.float16)
    ids = torch.tensor([1, 2, 3], dtype=torch.float32)
    eye = torch.eye(n, dtype=torch.bfloat16)
    fill = torch.full((n,), 7, dtype=torch.float64)
    flags = torch.full((n,), True, dtype=torch.int64)
    table = torch.tensor(np.asarray(values), dtype=torch.float32)
    # reported without a fix: the values would differ
    noise = torch.randn(n).half()
    grid = torch.linspace(0, 1, n).double()
    scaled = torch.tensor([0.1, 0.2]).double()
    halfstep = torch.arange(0, 1, 0.25).half()
    leaf = torch.zeros(n, requires_grad=True).half()
    return (mask, ones, positions, steps, ids, eye, fill, flags, table)


# Not flagged: a dtype= already given, a cast that is not right after the creation,
# a cast to the dtype the tensor already has (`.float()` of float32, `.long()` of
# integers), a dtype the file does not show, data of unknown type, a move to a device,
# not a creator.
def fine(n, x, device, labels, p):
    h = torch.arange(n - 1, -1, -1).long()
    i = torch.tensor([1, 2, 3]).long()
    j = torch.tensor(labels).long()
    k = torch.tensor(p).float()
    m = torch.zeros(n).to(x.dtype)
    o = torch.tensor([0.5, 1.0]).float()
    a = torch.zeros(n, dtype=torch.float32).half()
    b = torch.zeros(n).view(-1, 1).half()
    c = torch.zeros(n).float()
    d = torch.randn(n).to(torch.float32)
    e = torch.zeros(n).to(device)
    f = torch.zeros_like(x).half()
    g = torch.from_numpy(np.zeros(3)).float()
    return a, b, c, d, e, f, g, h, i, j, k, m, o


# The dtype is spelled as the file imports torch.
def renamed(n):
    from torch import ones

    return ones(n, dtype=torch.float16)
