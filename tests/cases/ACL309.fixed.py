# target-torch: 2.4
# ACL309 (off by default): Adam, AdamW and SGD on CUDA without `fused=`.
import torch
from torch import optim

model = torch.nn.Linear(8, 2).cuda()
a = optim.Adam(model.parameters(), lr=1e-3, fused=True)
b = torch.optim.AdamW(
    model.parameters(),
    lr=1e-3,
    weight_decay=0.05,
    fused=True,
)
c = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)


class WarmSGD(optim.SGD):
    pass


d = WarmSGD(model.parameters(), lr=0.1, fused=True)

# should not flag: a choice already made, a dict that may carry it, other optimizers
e = optim.Adam(model.parameters(), fused=False)
kwargs = {"lr": 1e-3}
f = optim.AdamW(model.parameters(), **kwargs)
g = optim.RMSprop(model.parameters())
