# target-torch: 2.4
# ACL313: a file that sets both APIs; its target torch predates fp32_precision, so the
# legacy switches are reported without a fix.
import torch

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cuda.matmul.fp32_precision = "tf32"
