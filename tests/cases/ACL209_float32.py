# The same sizes without half-precision autocast (float32 training, or autocast to
# float32 only): not reported.
import torch
import torch.nn as nn

model = nn.Sequential(nn.Embedding(50257, 768), nn.Linear(768, 50257)).cuda()
opt = torch.optim.AdamW(model.parameters())  # ACL309
for _ in range(3):
    with torch.autocast("cuda", dtype=torch.float32):
        loss = model(torch.randint(0, 50257, (4, 16)).cuda()).mean()
    loss.backward()
    opt.step()
