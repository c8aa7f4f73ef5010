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
model.zero_grad(set_to_none=True)

model.zero_grad(set_to_none=True)

model.zero_grad(set_to_none=True)

head.zero_grad(set_to_none=True)

model.body.zero_grad(set_to_none=True)

model.zero_grad(set_to_none=True)

model.zero_grad(set_to_none=True)

# torch's own zero_grad body, copied
# in place, no new tensor
# the memset
model.zero_grad(set_to_none=True)  # keep me


def train_step(net, x, opt):
    loss = net(x).sum()
    loss.backward()
    opt.step()
    net.zero_grad(set_to_none=True)
    return loss


class Trainer:
    def __init__(self):
        self.model = Net()

    def step(self):
        with torch.no_grad():
            self.model.zero_grad(set_to_none=True)


for epoch in range(2):
    for step in range(3):
        if step % 2 == 0:
            model.zero_grad(set_to_none=True)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def clear(self):
        self.zero_grad(set_to_none=True)


class Custom(nn.Module):
    def zero_grad(self):
        # the class's own zero_grad: replacing the loop would call itself
        for p in self.parameters():
            p.grad.zero_()

    def reset(self):
        # reported without a fix: `zero_grad` here takes no `set_to_none`
        for p in self.parameters():
            p.grad.zero_()


custom = Custom()
for p in custom.parameters():
    p.grad.zero_()
