# A 1d convnet under autocast: channels_last is a layout of 2d (NCHW) images; not
# reported.
import torch
import torch.nn as nn


class Net1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(3, 8, 3)  # ACL202

    def forward(self, x):
        return self.conv(x)


def train(loader):
    model = Net1d().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        with torch.autocast("cuda"):  # ACL314
            loss = model(x.cuda()).mean()
        loss.backward()
        opt.step()
