# target-torch: 2.9
# ACL313: cuDNN's recurrent-layer switch set with the new API, its convolutions with the
# legacy one: the fix moves the legacy one to the new API too.
import torch

torch.backends.cudnn.rnn.fp32_precision = "tf32"
torch.backends.cudnn.conv.fp32_precision = "tf32"
torch.backends.cudnn.rnn.fp32_precision = "tf32"


def configure():
    # Not flagged: the new API
    torch.backends.cudnn.conv.fp32_precision = "tf32"
