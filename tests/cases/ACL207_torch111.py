# target-torch: 1.11
# Before torch 1.12 there is no set_float32_matmul_precision: the fix sets the
# matmul TF32 switch instead, after the imports of this script.
import torch
import torch.nn as nn

model = nn.Linear(512, 512).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(10):
    model(torch.randn(64, 512).cuda()).pow(2).mean().backward()  # ACL203
    opt.step()  # ACL207
    opt.zero_grad()  # ACL302
