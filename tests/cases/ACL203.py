# ACL203: tensors created on the CPU, then moved to the device.
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        positions = torch.arange(x.size(1)).to(x.device)  # ACL203
        return self.proj(x) + positions.unsqueeze(-1)


def step(model, x, local_rank):
    h0 = torch.zeros(2, x.size(0), 16).to(device)  # ACL203
    mask = torch.ones(x.size(0)).cuda()  # ACL203
    noise = torch.randn(x.size(0), 16).to(device, non_blocking=True)  # ACL203
    labels = torch.tensor([0, 1, 1]).to(device, dtype=torch.long)  # ACL203
    halves = torch.zeros(4).to(device, torch.float16)  # ACL203
    scale = torch.full((4,), 0.5).to(device, torch.float16)  # ACL203
    eye = torch.eye(3).cuda(0)  # ACL203
    grid = torch.linspace(0, 1, 5, device="cpu").to(device)  # ACL203
    per_rank = torch.zeros(3).cuda(local_rank)  # ACL203
    leaf = torch.zeros(3, requires_grad=True).cuda()  # ACL203
    return h0, mask, noise, labels, halves, scale, eye, grid, per_rank, leaf


# Not flagged: created on the device already, moved to the CPU, converted only,
# not one of the creators, or moved later in the chain.
def fine(x, other):
    a = torch.zeros(3, device=device)
    b = torch.zeros(3).to("cpu")
    c = torch.arange(10).to(torch.float32)  # ACL212
    d = torch.zeros(3).to(other)
    e = torch.from_numpy(x).cuda()
    f = torch.zeros(3).float().cuda()
    g = torch.zeros_like(x).cuda()
    # a pinned staging tensor copied asynchronously on purpose (modded-nanogpt)
    h = torch.tensor(7, dtype=torch.int32, pin_memory=True).cuda(non_blocking=True)
    return a, b, c, d, e, f, g, h
