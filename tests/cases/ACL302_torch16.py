# target-torch: 1.6
# ACL302: torch 1.6 has no `set_to_none`: reported without a fix.
import torch

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
optimizer.zero_grad()  # ACL302
