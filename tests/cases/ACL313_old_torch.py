# target-torch: 2.4
# ACL313: legacy switches alone, in code that must run on torch before 2.9.
import torch

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
