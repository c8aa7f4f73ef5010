# ACL301: loops over an optimizer's param_groups, and how the optimizer is recognised.
import torch
from torch import optim
from torch.optim.lr_scheduler import StepLR

model = torch.nn.Linear(4, 2)
sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
adam = optim.Adam(model.parameters())

for group in sgd.param_groups:  # ACL301
    for p in group["params"]:
        if p.grad is not None:
            p.grad.zero_()

# reset
for g in adam.param_groups:  # ACL301
    # every tensor of the group
    for p in g['params']:
        p.grad.data.zero_()


def stepped(optimizer):
    for group in optimizer.param_groups:  # ACL301
        for p in group["params"]:
            p.grad.zero_()
    optimizer.step()


def scaled(optimizer, scaler):
    for group in optimizer.param_groups:  # ACL301
        for p in group["params"]:
            p.grad.zero_()
    scaler.step(optimizer)


def scheduled(optimizer):
    scheduler = StepLR(optimizer, step_size=1)
    for group in optimizer.param_groups:  # ACL301
        for p in group["params"]:
            p.grad.zero_()
    return scheduler


def unknown(thing):
    # never stepped, but `param_groups` of "params" lists is torch's optimizer protocol
    for group in thing.param_groups:  # ACL301
        for p in group["params"]:
            p.grad.zero_()


class Clipper(torch.optim.Optimizer):
    def zero_grad(self, set_to_none=False):
        # the optimizer's own zero_grad: replacing the loop would call itself
        for group in self.param_groups:
            for p in group["params"]:
                p.grad.zero_()

    def reset(self):
        for group in self.param_groups:  # ACL301
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
for group in sharded.param_groups:  # ACL301
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
        for group in self.optimizer.param_groups:  # ACL301
            for p in group["params"]:
                p.grad.zero_()


# the group loop also sets the learning rate: reported, not fixed
for group in sgd.param_groups:  # ACL301
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
