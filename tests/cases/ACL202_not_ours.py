# Convolutions of another library (a `Conv2d` that is not torch.nn's): not reported.
import torch
from mylib.layers import Conv2d

model = Conv2d(3, 3, 3).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    model(torch.randn(1, 3, 8, 8).cuda()).sum().backward()  # ACL203
    opt.step()  # ACL207
