# target-torch: 1.6
# ACL301: `set_to_none` arrived in torch 1.7, so no fix is offered before it.
import torch

model = torch.nn.Linear(4, 2)
for p in model.parameters():
    p.grad.zero_()
