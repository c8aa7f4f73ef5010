# target-torch: 1.6
# torch 1.6 has no TF32 switch at all: reported, without a fix.
import torch
import torch.nn as nn

model = nn.Linear(512, 512).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(10):
    model(torch.randn(64, 512).cuda()).pow(2).mean().backward()
    opt.step()
    opt.zero_grad()
