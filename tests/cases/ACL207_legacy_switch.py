# target-torch: 2.8
# The legacy TF32 switch, set through an alias of the module: a choice.
import torch
import torch.nn as nn
from torch.backends import cuda as cuda_backend

cuda_backend.matmul.allow_tf32 = False
model = nn.Linear(512, 512).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)  # ACL309
for _ in range(10):
    model(torch.randn(64, 512).cuda()).pow(2).mean().backward()  # ACL203
    opt.step()
