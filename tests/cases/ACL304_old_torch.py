# target-torch: 2.3
# ACL304: code that must still run on torch 2.3 keeps the old API (torch.amp.custom_fwd
# does not exist there); nothing is reported.
import torch

scaler = torch.cuda.amp.GradScaler()
with torch.cuda.amp.autocast():
    pass
