# ACL312: files where the scaler may be needed are not reported.
import torch

model = torch.nn.Linear(8, 1)
scaler = torch.amp.GradScaler("cuda")
disabled = torch.amp.GradScaler("cuda", enabled=False)

# an autocast without a dtype is float16 on CUDA
with torch.autocast("cuda"):
    loss = model(torch.randn(2, 8)).sum()
with torch.autocast("cuda", dtype=torch.bfloat16):
    other = model(torch.randn(2, 8)).sum()
