# target-torch: 1.13
# Before torch 2.0 TorchScript was the way to fuse: not reported.
import torch


@torch.jit.script
def fused_gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))


def train(model, loader, optimizer):
    model = torch.jit.script(model)
    for x in loader:
        fused_gelu(model(x)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()  # ACL302
