# A plain script that trains at module level, with cuDNN imported under an alias:
# the setting goes after the imports, spelled the file's way.
import torch
import torch.backends.cudnn as cudnn
from torch import nn

model = nn.Sequential(
    nn.Conv2d(1, 8, 5),  # ACL202
    nn.ReLU(),
    nn.Flatten(),
    nn.LazyLinear(10),
).cuda()
opt = torch.optim.Adam(model.parameters())  # ACL309
for step in range(100):
    x = torch.randn(32, 1, 28, 28).cuda()  # ACL203
    loss = model(x).logsumexp(1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()  # ACL207
print(cudnn.version())
