# ACL403: after destroy_process_group() there is no group to ask for the rank, so
# the fix needs the script's own rank variable or is not offered.
import os

import torch
import torch.distributed as dist

model = torch.nn.Linear(4, 2)


def without_rank_variable():
    dist.init_process_group("gloo")
    dist.destroy_process_group()
    torch.save(model.state_dict(), "final.pt")


def with_rank_variable():
    dist.init_process_group("gloo")
    rank = int(os.environ["RANK"])
    dist.destroy_process_group()
    if rank == 0:
        torch.save(model.state_dict(), "final.pt")


without_rank_variable()
with_rank_variable()
