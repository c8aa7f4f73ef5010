# ACL301: a file that captures CUDA graphs needs stable gradient tensors, so
# zero-filling them in place is required there (here through torch.compile).
import torch

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
step = torch.compile(model, mode="reduce-overhead")

for group in optimizer.param_groups:
    for p in group["params"]:
        if p.grad is not None:
            p.grad.zero_()
for p in model.parameters():
    p.grad.zero_()
