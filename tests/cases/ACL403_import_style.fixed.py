# ACL403: no `torch.distributed` alias in the file: the fix spells the full path.
import torch
from torch.nn.parallel import DistributedDataParallel


def main():
    model = DistributedDataParallel(torch.nn.Linear(4, 2))
    if torch.distributed.get_rank() == 0:
        torch.save(model.module.state_dict(), "model.pt")


if torch.cuda.is_available():
    torch.distributed.init_process_group("nccl")
else:
    torch.distributed.init_process_group("gloo")
main()
