# ACL301: loops over an optimizer's param_groups, and how the optimizer is recognised.
import torch
from torch import optim
from torch.optim.lr_scheduler import StepLR

model = torch.nn.Linear(4, 2)
sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
adam = optim.Adam(model.parameters())

sgd.zero_grad(set_to_none=True)

# reset
# every tensor of the group
adam.zero_grad(set_to_none=True)


def stepped(optimizer):
    optimizer.zero_grad(set_to_none=True)
    optimizer.step()


def scaled(optimizer, scaler):
    optimizer.zero_grad(set_to_none=True)
    scaler.step(optimizer)


def scheduled(optimizer):
    scheduler = StepLR(optimizer, step_size=1)
    optimizer.zero_grad(set_to_none=True)
    return scheduler


def unknown(thing):
    # never stepped, but `param_groups` of "params" lists is torch's optimizer protocol
    thing.zero_grad(set_to_none=True)


class Clipper(torch.optim.Optimizer):
    def zero_grad(self, set_to_none=False):
        # the optimizer's own zero_grad: replacing the loop would call itself
        for group in self.param_groups:
            for p in group["params"]:
                p.grad.zero_()

    def reset(self):
        for group in self.param_groups:
            for p in group["params"]:
                p.grad.zero_()


class Sharded(Clipper):
    pass


class Homemade:
    def __init__(self, params):
        self.param_groups = [{"params": list(params)}]

    def step(self):
        pass


sharded = Sharded(model.parameters(), {})
for group in sharded.param_groups:
    for p in group["params"]:
        p.grad.zero_()

homemade = Homemade(model.parameters())
homemade.step()
for group in homemade.param_groups:
    for p in group["params"]:
        p.grad.zero_()


class Loop:
    def __init__(self, net):
        self.optimizer = torch.optim.AdamW(net.parameters())

    def clear(self):
        self.optimizer.zero_grad(set_to_none=True)


# the group loop also sets the learning rate: reported, not fixed
for group in sgd.param_groups:
    group["lr"] = 0.01
    for p in group["params"]:
        p.grad.zero_()

# only the first group, or another key: not the optimizer's zero_grad
for p in sgd.param_groups[0]["params"]:
    p.grad.zero_()
for group in sgd.param_groups:
    for p in group["frozen"]:
        p.grad.zero_()
for group in sgd.param_groups:
    if group.get("skip"):
        continue
    for p in group["params"]:
        p.grad.zero_()
