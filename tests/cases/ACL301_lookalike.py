# ACL301: loops that are not a manual zero_grad of every parameter.
import deepspeed
import torch

model = torch.nn.Linear(4, 2)
other = torch.nn.Linear(2, 2)


class Bank:
    def parameters(self):
        return [torch.zeros(3, requires_grad=True)]


bank = Bank()

for name, p in model.named_parameters():
    if "bias" in name:
        p.grad.zero_()  # only some gradients: masking, not zero_grad
for p in model.parameters():
    if p.requires_grad and p.grad is not None:
        p.grad.zero_()
for p in model.parameters():
    p.data.zero_()  # the weights
for p in model.parameters():
    other.weight.grad.zero_()  # not the loop's parameter
for p in model.parameters():
    p.grad = None  # already the fast way
for p in model.parameters():
    p.grad.mul_(0.5)
for p in model.parameters():
    p.grad.fill_(1)
for p in model.parameters():
    p.grad = torch.zeros_like(other.weight)
for p in model.parameters():
    p.grad = torch.ones_like(p)
for p in model.parameters():
    if p.grad is None:
        break
    p.grad.zero_()
for p in model.parameters():
    for _ in range(2):
        p.grad.zero_()
for p in model.parameters():
    p = p * 2
for i, p in enumerate(model.parameters()):
    p.grad.zero_()
for p in model.named_parameters():
    p[1].grad.zero_()
for p in bank.parameters():
    p.grad.zero_()  # a local class that is not a torch module
engine, _, _, _ = deepspeed.initialize(model=model)
for p in engine.parameters():
    p.grad.zero_()  # DeepSpeed's engine: its zero_grad takes no set_to_none
for p in model.grad_params():
    p.grad.zero_()


def zeros_like(t):
    return t * 0


for p in model.parameters():
    p.grad = zeros_like(p)
