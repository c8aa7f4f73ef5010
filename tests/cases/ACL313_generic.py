# target-torch: 2.9
# ACL313: the generic fp32_precision switches (backend-wide, cuDNN's convolutions and
# recurrent layers) mixed with the legacy ones in one file.
import torch
from torch.backends import cudnn

torch.backends.fp32_precision = "tf32"
torch.backends.cudnn.conv.fp32_precision = "tf32"
cudnn.rnn.fp32_precision = "tf32"
torch.backends.cuda.matmul.allow_tf32 = True  # ACL313
cudnn.allow_tf32 = True  # ACL313
