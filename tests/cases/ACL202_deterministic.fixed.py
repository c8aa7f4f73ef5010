# Determinism chosen on purpose (any spelling of cuDNN's module): not reported.
import torch
import torch.nn as nn
from torch.backends import cudnn

cudnn.deterministic = True

model = nn.Conv2d(3, 3, 3).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    model(torch.randn(1, 3, 8, 8).cuda()).sum().backward()
    opt.step()
