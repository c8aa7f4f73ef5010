# ACL309 negative: the file touches CUDA (it picks a device for its tensors), but the
# optimizer's model is built on the CPU and never moved: `fused=` would not be asked.
# The second model is moved, and its optimizer is reported.
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"


def fit_probe(features, labels):
    probe = nn.Linear(features.shape[1], 10)
    optimizer = torch.optim.SGD(probe.parameters(), lr=0.1)
    for step in range(100):
        loss = nn.functional.cross_entropy(probe(features), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return probe


def train(loader):
    torch.set_float32_matmul_precision("high")
    model = nn.Linear(64, 10).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model
