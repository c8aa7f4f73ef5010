# channels_last already in the file (here on the inputs only): not reported.
import torch
import torch.nn as nn

model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()).cuda()  # ACL202
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(10):
    x = torch.randn(8, 3, 32, 32).cuda().to(memory_format=torch.channels_last)  # ACL203
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).mean()
    loss.backward()
    opt.step()
