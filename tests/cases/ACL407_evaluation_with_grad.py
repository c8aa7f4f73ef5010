# ACL407 in a file that does not train but whose own evaluation runs with autograd
# on: every forward of the wrapped model records a graph, and DDP searches it.
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def evaluate(model, loader):
    model.eval()
    losses = []
    for x, y in loader:  # ACL311
        losses.append(torch.nn.functional.cross_entropy(model(x), y).item())
    return sum(losses) / len(losses)


def main(loader):
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(8, 2), find_unused_parameters=True)  # ACL407
    print(evaluate(model, loader))


def features(loader):
    # the wrapped model called directly, with autograd on
    net = DDP(torch.nn.Linear(8, 2), find_unused_parameters=True)  # ACL407
    return [net(x) for x, _ in loader]
