# Float32 training on the CPU: TF32 is a GPU feature, not reported.
import torch
import torch.nn as nn

model = nn.Linear(512, 512)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(10):
    model(torch.randn(64, 512)).pow(2).mean().backward()
    opt.step()
