# ACL412 negative: a single-process script (it only imports torch.distributed): the
# checkpoint goes back where it came from, once.
import torch
import torch.distributed as dist

model = torch.nn.Linear(8, 2)
model.load_state_dict(torch.load("model.pt"))
print(dist.is_available())
