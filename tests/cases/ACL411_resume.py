# ACL411 without a fix: the script resumes by loading its own checkpoints into the
# wrapped model, so saving without the prefix would break its resume; the loader it
# calls is named for what it does.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from utils import restart_from_checkpoint

torch.distributed.init_process_group("nccl")
model = DDP(torch.nn.Linear(8, 2).cuda(), device_ids=[0])
restart_from_checkpoint("checkpoint.pth", state_dict=model)
if torch.distributed.get_rank() == 0:
    torch.save({"state_dict": model.state_dict()}, "checkpoint.pth")  # ACL411
