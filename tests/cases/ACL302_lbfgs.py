# ACL302: an LBFGS closure re-evaluates the loss on every call; LBFGS reads a missing
# gradient as zeros, so set_to_none=False there is the slow path too.
import torch

model = torch.nn.Linear(4, 2)
x = torch.randn(8, 4)
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.1)


def closure():
    optimizer.zero_grad(set_to_none=False)  # ACL302
    loss = model(x).pow(2).mean()
    loss.backward()
    return loss


for _ in range(3):
    optimizer.step(closure)
