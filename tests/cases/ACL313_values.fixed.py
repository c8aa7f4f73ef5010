# target-torch: 2.9
# ACL313: values after which torch 2.13 would raise on a later read of the legacy flag
# are reported without a fix (and so, to avoid half a migration, is the rest).
import torch


def configure(tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32


torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = False
