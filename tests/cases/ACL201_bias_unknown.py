# ACL201: a bias read through a module that could be any conv turns every fix off;
# the findings stay.
import torch.nn as nn


def init_weights(m):
    if isinstance(m, nn.Conv2d):
        nn.init.kaiming_normal_(m.weight)
        nn.init.zeros_(m.bias)


model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())  # ACL201
model.apply(init_weights)
