# The `fp32_precision` settings of torch 2.9: a choice.
import torch
import torch.nn as nn

torch.backends.cuda.matmul.fp32_precision = "ieee"
model = nn.Linear(512, 512).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(10):
    model(torch.randn(64, 512).cuda()).pow(2).mean().backward()  # ACL203
    opt.step()
