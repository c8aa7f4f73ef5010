# ACL403: which rank variable the fix tests.
import argparse
import os

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--rank", type=int, default=-1)
parser.add_argument("--local_rank", type=int, default=-1)
args = parser.parse_args()
dist.init_process_group("gloo")
model = torch.nn.Linear(4, 2)


def uses_argparse_rank():
    # nothing sets --rank from the launcher: it is not the rank, get_rank() is
    if dist.get_rank() == 0:
        torch.save(model, "a.pt")


def uses_parameter(global_rank, epoch):
    if global_rank == 0:
        torch.save(model, "b.pt")


def bound_after_the_save():
    if dist.get_rank() == 0:
        torch.save(model, "c.pt")
    rank = dist.get_rank()
    return rank


def bound_on_one_path(distributed):
    if distributed:
        rank = int(os.environ["RANK"])
    if dist.get_rank() == 0:
        torch.save(model, "d.pt")


class Runner:
    def __init__(self):
        self.global_rank = dist.get_rank()
        self.local_rank = int(os.environ["LOCAL_RANK"])

    def save(self):
        if self.global_rank == 0:
            torch.save(model, "e.pt")


uses_argparse_rank()
uses_parameter(dist.get_rank(), 0)
bound_after_the_save()
bound_on_one_path(True)
Runner().save()
