# ACL410 without a fix: the script also tests for apex's wrapper (`isinstance`) to
# unwrap the model when saving; rewriting the wrap alone would leave that test false
# on torch's wrapper, and the import could not go.
import os

import torch
import torch.distributed as dist
from apex.parallel import DistributedDataParallel as ApexDDP

local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl")
torch.cuda.set_device(local_rank)
model = ApexDDP(torch.nn.Linear(8, 2).cuda())  # ACL410
bare = model.module if isinstance(model, ApexDDP) else model
if dist.get_rank() == 0:
    torch.save(bare.state_dict(), "model.pt")
