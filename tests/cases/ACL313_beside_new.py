# target-torch: 2.4
# ACL313: legacy TF32 switches set on every run beside the new ones (set where torch
# has them) mix the two APIs on any torch that has both; a legacy switch in the other
# branch of the same test is a choice.
import torch

torch.backends.cuda.matmul.allow_tf32 = True  # ACL313
torch.backends.cudnn.allow_tf32 = True  # ACL313
if hasattr(torch.backends.cuda.matmul, "fp32_precision"):
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    torch.backends.cudnn.conv.fp32_precision = "tf32"


def configure_eval():
    if hasattr(torch.backends.cudnn.conv, "fp32_precision"):
        torch.backends.cudnn.conv.fp32_precision = "ieee"
    else:
        torch.backends.cudnn.allow_tf32 = False
