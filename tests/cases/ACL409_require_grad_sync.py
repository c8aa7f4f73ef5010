# ACL409 negative: nanoGPT's way, `require_backward_grad_sync` set on each micro-batch
# to synchronize only the last one.
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(torch.nn.Linear(8, 2).cuda(), device_ids=[0])
optimizer = torch.optim.AdamW(model.parameters())  # ACL309
gradient_accumulation_steps = 8


def get_batch():
    return torch.randn(4, 8, device="cuda")


for iter_num in range(100):
    for micro_step in range(gradient_accumulation_steps):
        model.require_backward_grad_sync = micro_step == gradient_accumulation_steps - 1
        loss = model(get_batch()).sum() / gradient_accumulation_steps
        loss.backward()
    optimizer.step()  # ACL207
    optimizer.zero_grad(set_to_none=True)
