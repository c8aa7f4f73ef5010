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
    torch.save(model, "a.pt")  # ACL403


def uses_parameter(global_rank, epoch):
    torch.save(model, "b.pt")  # ACL403


def bound_after_the_save():
    torch.save(model, "c.pt")  # ACL403
    rank = dist.get_rank()
    return rank


def bound_on_one_path(distributed):
    if distributed:
        rank = int(os.environ["RANK"])
    torch.save(model, "d.pt")  # ACL403


class Runner:
    def __init__(self):
        self.global_rank = dist.get_rank()
        self.local_rank = int(os.environ["LOCAL_RANK"])

    def save(self):
        torch.save(model, "e.pt")  # ACL403


uses_argparse_rank()
uses_parameter(dist.get_rank(), 0)
bound_after_the_save()
bound_on_one_path(True)
Runner().save()
