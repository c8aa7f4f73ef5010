# target-torch: 2.9
# ACL313: the file compiles its model: torch.compile still reads the legacy flags while
# autotuning, which raise once only the new API has turned TF32 on.
import torch

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
model = torch.compile(torch.nn.Linear(8, 8))
