# ACL302: receivers built where this file cannot see. `set_to_none` is torch's API,
# and the wrappers others build around torch's optimizers forward it.
import torch
from accelerate import Accelerator
from mylib import trainer
from timm.optim import create_optimizer_v2
from utils.torch_utils import smart_optimizer

model = torch.nn.Linear(4, 2)
# the project's own factory (yolov3's `smart_optimizer`)
optimizer = smart_optimizer(model, "SGD", 0.01, 0.9, 1e-5)
optimizer.zero_grad(set_to_none=False)  # ACL302

adamw = create_optimizer_v2(model, "adamw", lr=1e-3)
adamw.zero_grad(set_to_none=False)  # ACL302

accelerator = Accelerator()
model, prepared = accelerator.prepare(model, adamw)
prepared.zero_grad(set_to_none=False)  # ACL302

trainer.zero_grad(set_to_none=False)  # ACL302
