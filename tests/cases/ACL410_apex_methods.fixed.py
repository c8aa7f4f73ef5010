# ACL410 without a fix: the script calls a method only apex's wrapper has
# (`disable_allreduce()` to accumulate gradients), which torch's DDP would not answer.
import torch
from apex.parallel import DistributedDataParallel as DDP

local_rank = 0
torch.cuda.set_device(local_rank)
torch.distributed.init_process_group("nccl")
model = DDP(torch.nn.Linear(8, 2).cuda(), delay_allreduce=True)
model.disable_allreduce()
