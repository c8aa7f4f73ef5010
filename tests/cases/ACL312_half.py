# ACL312: bfloat16 autocast, but the file also computes in float16 (`.half()`).
import torch

model = torch.nn.Linear(8, 1).cuda().half()
scaler = torch.amp.GradScaler("cuda")
with torch.autocast("cuda", dtype=torch.bfloat16):
    loss = model(torch.randn(2, 8).cuda().half()).sum()  # ACL203
scaler.scale(loss).backward()
