# A convnet trained on CUDA from main(): the setting goes at the start of main(),
# after its docstring and imports; the finding is on the first conv constructor.
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)  # ACL202
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.conv2(x))
        return self.fc(x.mean((2, 3)))


def main():
    """Train the net."""
    import time

    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    start = time.time()
    for _ in range(args.steps):
        images = torch.randn(8, 3, 32, 32, device=device)
        labels = torch.randint(0, 10, (8,), device=device)
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()  # ACL207
    print(time.time() - start)


if __name__ == "__main__":
    main()
