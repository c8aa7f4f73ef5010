# ACL403: which conditions guard a torch.save to one process.
import os

import horovod.torch as hvd
import torch
import torch.distributed as dist
from accelerate import Accelerator
from lightning.pytorch.utilities import rank_zero_only

dist.init_process_group("gloo")
hvd.init()
accelerator = Accelerator()
rank = dist.get_rank()
RANK = int(os.environ.get("RANK", -1))
local_rank = int(os.environ["LOCAL_RANK"])
master_process = rank == 0
is_master = RANK in {-1, 0}
model = torch.nn.Linear(4, 2)


def get_rank():
    if not dist.is_initialized():
        return 0
    return dist.get_rank()


def is_main_process():
    return get_rank() == 0


def chief():
    return dist.get_rank() == 0


class Args:
    local_rank = -1
    force = False


args = Args()

# should not flag: guarded to one process
if rank == 0:
    torch.save(model, "a.pt")
if 0 == rank:
    torch.save(model, "b.pt")
if dist.get_rank() == 0:
    torch.save(model, "c.pt")
if args.local_rank in [-1, 0]:
    torch.save(model, "d.pt")
if not rank:
    torch.save(model, "e.pt")
if hvd.rank() == 0:
    torch.save(model, "f.pt")
if local_rank <= 0:
    torch.save(model, "g.pt")
if is_main_process():
    torch.save(model, "h.pt")
if accelerator.is_main_process:
    torch.save(model, "i.pt")
if master_process:
    torch.save(model, "j.pt")
if is_master:
    torch.save(model, "k.pt")
if chief():
    torch.save(model, "l.pt")
if rank != 0:
    print("waiting for rank 0")
else:
    torch.save(model, "m.pt")
if not dist.is_initialized() or dist.get_rank() == 0:
    torch.save(model, "n.pt")
if rank % 8 == 0:  # one copy per node, on purpose
    torch.save(model, "o.pt")
if rank == 0 and args.force:
    torch.save(model, "p.pt")
if rank == 1:
    torch.save(model, "q.pt")
if rank in args.saving_ranks:  # a rank test we cannot read: trusted
    torch.save(model, "r.pt")
torch.save(model, "s.pt") if rank == 0 else None
rank == 0 and torch.save(model, "t.pt")
if rank == 0: torch.save(model, "u.pt")


def early_exit():
    if rank != 0:
        return
    torch.save(model, "v.pt")


@rank_zero_only
def decorated():
    torch.save(model, "w.pt")


# should flag
if rank == 0:
    torch.save(model, "model.pt")
if rank == 0:
    torch.save(
        model.state_dict(),
        "weights.pt",
    )
for epoch in range(3):
    # every epoch
    if rank == 0:
        torch.save(model, "epoch.pt")
if args.force:
    if rank == 0:
        torch.save(model, "forced.pt")
if rank != 0:
    torch.save(model, "not_zero.pt")
if rank == 0 or args.force:
    torch.save(model, "either.pt")
print("saving"); torch.save(model, "shared_line.pt")
early_exit()
decorated()
