# ACL212: tensors created in one dtype, then cast to another.
import numpy as np
import torch


def build(n, x, values):
    mask = torch.zeros(n, n).bool()  # ACL212
    ones = torch.ones(n).half()  # ACL212
    positions = torch.arange(n).float()  # ACL212
    steps = torch.arange(0, n).to(torch.float16)  # ACL212
    ids = torch.tensor([1, 2, 3]).float()  # ACL212
    eye = torch.eye(n).to(dtype=torch.bfloat16)  # ACL212
    fill = torch.full((n,), 7).double()  # ACL212
    flags = torch.full((n,), True).long()  # ACL212
    table = torch.tensor(np.asarray(values)).float()  # ACL212
    # reported without a fix: the values would differ
    noise = torch.randn(n).half()  # ACL212
    grid = torch.linspace(0, 1, n).double()  # ACL212
    scaled = torch.tensor([0.1, 0.2]).double()  # ACL212
    halfstep = torch.arange(0, 1, 0.25).half()  # ACL212
    leaf = torch.zeros(n, requires_grad=True).half()  # ACL212
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

    return ones(n).half()  # ACL212
