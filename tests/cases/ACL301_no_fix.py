# ACL301: loops that zero every gradient but do more, or walk only some parameters:
# reported without a fix.
import torch

model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
norms = []

for p in model.parameters():  # ACL301
    if p.grad is not None:
        norms.append(p.grad.norm())
        p.grad.zero_()

for name, p in model.named_parameters():  # ACL301
    print(name)
    p.grad.zero_()

for p in model.parameters():  # ACL301
    p.grad.zero_()
else:
    print("done")

for p in model.parameters():  # ACL301
    if p.grad is not None:
        p.grad.zero_()
    else:
        p.grad = torch.zeros_like(p)

for p in model.parameters(recurse=False):  # ACL301
    p.grad.zero_()

for name, p in model.named_parameters("", False):  # ACL301
    p.grad.zero_()

for m in model.modules():
    for p in m.parameters(recurse=False):  # ACL301
        p.grad.zero_()
