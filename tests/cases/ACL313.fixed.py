# target-torch: 2.9
# ACL313: the legacy TF32 switches, rewritten to fp32_precision where the rewrite keeps
# torch's legacy state as it was (matmuls exact, cuDNN allowed TF32: the defaults).
import torch
from torch.backends import cudnn

torch.backends.cuda.matmul.fp32_precision = "ieee"  # exact float32 matmuls
cudnn.conv.fp32_precision = "tf32"
cudnn.rnn.fp32_precision = "tf32"
torch.backends.cudnn.conv.fp32_precision = "tf32"; torch.backends.cudnn.rnn.fp32_precision = "tf32"; x = 1

# should not flag: one API chosen by version
if hasattr(torch.backends.cuda.matmul, "fp32_precision"):
    torch.backends.cuda.matmul.fp32_precision = "tf32"
else:
    torch.backends.cuda.matmul.allow_tf32 = True
try:
    torch.backends.cudnn.conv.fp32_precision = "tf32"
except AttributeError:
    torch.backends.cudnn.allow_tf32 = True
