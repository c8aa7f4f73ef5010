# The autotuner switched off explicitly through an alias of the module, next to other
# flags in one assignment: a choice, not reported.
import torch
import torch.nn as nn

backends = torch.backends.cudnn
backends.benchmark, backends.enabled = False, True

model = nn.Conv2d(3, 3, 3).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    model(torch.randn(1, 3, 8, 8).cuda()).sum().backward()  # ACL203
    opt.step()  # ACL207
