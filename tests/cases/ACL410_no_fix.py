# ACL410 without a fix: an apex option torch's DDP has no counterpart for, and no
# local-rank variable to name the device with. apex's module imported whole
# (`import apex`) is found too.
import apex
import torch
from apex.parallel import DistributedDataParallel as ApexDDP

torch.distributed.init_process_group("nccl")
model = torch.nn.Linear(8, 2).cuda()
a = ApexDDP(model, gradient_average=False)  # ACL410
b = apex.parallel.DistributedDataParallel(model)  # ACL410
