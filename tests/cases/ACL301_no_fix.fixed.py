# ACL301: loops that zero every gradient but do more, or walk only some parameters:
# reported without a fix.
import torch

model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
norms = []

for p in model.parameters():
    if p.grad is not None:
        norms.append(p.grad.norm())
        p.grad.zero_()

for name, p in model.named_parameters():
    print(name)
    p.grad.zero_()

for p in model.parameters():
    p.grad.zero_()
else:
    print("done")

for p in model.parameters():
    if p.grad is not None:
        p.grad.zero_()
    else:
        p.grad = torch.zeros_like(p)

for p in model.parameters(recurse=False):
    p.grad.zero_()

for name, p in model.named_parameters("", False):
    p.grad.zero_()

for m in model.modules():
    for p in m.parameters(recurse=False):
        p.grad.zero_()
