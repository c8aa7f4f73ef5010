# ACL317: `if __name__ == "__main__":` is the script itself, not a condition: the
# determinism switch under it is set on every run.
import torch
import torch.nn as nn


def train():
    model = nn.Linear(64, 64).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    for step in range(100):
        x = torch.randn(8, 64, device="cuda")
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    torch.backends.cudnn.deterministic = True
    torch.set_float32_matmul_precision("high")
    if torch.cuda.device_count() > 1:
        torch.use_deterministic_algorithms(True)
    train()
