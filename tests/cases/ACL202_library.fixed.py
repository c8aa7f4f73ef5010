# A module that defines a trainer but no entry point: reported without a fix, since
# the script that imports it is where the setting belongs.
import torch
from torch import nn


class Trainer:
    def __init__(self):
        self.model = nn.Conv2d(3, 8, 3).cuda()
        self.opt = torch.optim.AdamW(self.model.parameters())

    def step(self, images):
        loss = self.model(images.cuda()).square().mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()
