# ACL410 negatives: torch's own DDP, a fallback import that may be torch's, and
# apex's amp and SyncBatchNorm converter (not its DDP).
import torch
from apex import amp
from apex.parallel import convert_syncbn_model

try:
    from apex.parallel import DistributedDataParallel as DDP
except ImportError:
    from torch.nn.parallel import DistributedDataParallel as DDP

model = convert_syncbn_model(torch.nn.Linear(8, 2).cuda())
model = DDP(model)
other = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 2).cuda(), device_ids=[0])
