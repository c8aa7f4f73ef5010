# A convnet trained on the CPU only: the autotuner does not exist there.
import torch
import torch.nn as nn

model = nn.Conv2d(3, 3, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    model(torch.randn(1, 3, 8, 8)).sum().backward()
    opt.step()
