# ACL206 negative: `@torch.compile` on a module-level function compiles it once, when
# the module is loaded; calling it every step is how it is meant to be used. A compile
# called inside the loop is still reported.
import torch
import torch.nn as nn
import torch.nn.functional as F


@torch.compile
def loss_fn(logits, target):
    return F.cross_entropy(logits, target)


@torch.no_grad()
def accuracy(logits, target):
    return (logits.argmax(1) == target).float().mean()


def train(loader):
    torch.set_float32_matmul_precision("high")
    model = nn.Linear(64, 10).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        step = torch.compile(model)  # ACL206
        loss = loss_fn(step(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(accuracy(model(x), y))
