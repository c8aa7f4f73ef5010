# ACL201: names from `from torch.nn import *`.
from torch.nn import *  # noqa: F403

model = Sequential(Conv2d(3, 8, 3, bias=False), BatchNorm2d(8), ReLU())
