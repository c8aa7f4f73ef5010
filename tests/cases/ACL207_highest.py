# Full float32 chosen on purpose ("highest" is a choice too): not reported.
import torch
import torch.nn as nn

torch.set_float32_matmul_precision("highest")
model = nn.Linear(512, 512).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(10):
    model(torch.randn(64, 512).cuda()).pow(2).mean().backward()  # ACL203
    opt.step()
