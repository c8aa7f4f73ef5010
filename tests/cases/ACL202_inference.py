# A CUDA convnet that is only evaluated: nothing trains here.
import torch
import torch.nn as nn

model = nn.Conv2d(3, 3, 3).cuda().eval()
with torch.no_grad():
    print(model(torch.randn(1, 3, 8, 8).cuda()).shape)  # ACL203
