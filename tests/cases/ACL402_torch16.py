# target-torch: 1.6
# ACL402: before torch 1.7 DataParallel's threads ran without autocast: every call of
# the wrapped model inside a block is flagged, and the decorator is the block's own call.
import torch
from torch.cuda.amp import autocast


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(x)


model = torch.nn.DataParallel(Net()).cuda()  # ACL401
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(32, 16).cuda()  # ACL203
    with autocast():  # ACL314
        loss = model(x).square().mean()  # ACL402
    loss.backward()
    opt.step()
