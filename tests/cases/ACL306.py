# ACL306: apex's AMP, resolved through imports.
import apex
import torch

try:
    from apex import amp
except ImportError:
    amp = None

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
if amp is not None:
    model, optimizer = amp.initialize(model, optimizer, opt_level="O2")  # ACL306


def step(loss):
    with amp.scale_loss(loss, optimizer) as scaled:  # ACL306
        scaled.backward()
    optimizer.step()


handle = apex.amp.init(enabled=True)  # ACL306

# should not flag: torch's own amp, and a state dict read through apex
with torch.amp.autocast("cpu"):
    pass
state = amp.state_dict()
