# ACL301: the loop forms over a module's parameters that zero-fill every gradient.
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))

    def forward(self, x):
        return self.body(x)


model = Net().to("cpu")
head = nn.Linear(2, 1)

# the plain loop, guarded, with detach_ first
for p in model.parameters():  # ACL301
    if p.grad is not None:
        p.grad.detach_()
        p.grad.zero_()

for name, param in model.named_parameters():  # ACL301
    param.grad.data.zero_()

for (_, param) in model.named_parameters():  # ACL301
    param.grad.fill_(0)

for p in head.parameters(): p.grad.fill_(0.0)  # ACL301

for p in model.body.parameters():  # ACL301
    if p.grad is None:
        continue
    p.grad.data.fill_(value=0)

for p in model.parameters(recurse=True):  # ACL301
    p.grad = torch.zeros_like(p.grad)

for p in model.parameters():  # ACL301
    p.grad = torch.zeros_like(p.data)

# torch's own zero_grad body, copied
for p in model.parameters():  # keep me  # ACL301
    if p.grad is not None:
        if p.grad.grad_fn is not None:
            p.grad.detach_()
        else:
            p.grad.requires_grad_(False)
        # in place, no new tensor
        p.grad.zero_()  # the memset


def train_step(net, x, opt):
    loss = net(x).sum()
    loss.backward()
    opt.step()
    for p in net.parameters():  # ACL301
        p.grad.zero_()
    return loss


class Trainer:
    def __init__(self):
        self.model = Net()

    def step(self):
        with torch.no_grad():
            for p in self.model.parameters():  # ACL301
                p.grad.zero_()


for epoch in range(2):
    for step in range(3):
        if step % 2 == 0:
            for p in model.parameters():  # ACL301
                p.grad.zero_()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def clear(self):
        for p in self.parameters():  # ACL301
            if p.grad is not None:
                if p.grad.grad_fn is not None:
                    p.grad.detach_()
                p.grad.zero_()
            else:
                pass


class Custom(nn.Module):
    def zero_grad(self):
        # the class's own zero_grad: replacing the loop would call itself
        for p in self.parameters():
            p.grad.zero_()

    def reset(self):
        # reported without a fix: `zero_grad` here takes no `set_to_none`
        for p in self.parameters():  # ACL301
            p.grad.zero_()


custom = Custom()
for p in custom.parameters():  # ACL301
    p.grad.zero_()
