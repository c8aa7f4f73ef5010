# ACL101: a script with no `if __name__ == "__main__":` guard. A loader built when
# the script is imported (at module level, or in a function or class that
# module-level code runs) keeps its finding but gets no fix: under `spawn` or
# `forkserver` every worker would import the script again and crash. A helper that
# nothing in the script calls is imported by other scripts: it is fixed.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
train_data = datasets.MNIST("data", train=True, download=True, transform=tf)
test_data = datasets.MNIST("data", train=False, transform=tf)
train_loader = DataLoader(train_data, batch_size=64, shuffle=True)  # ACL101 ACL102


def make_test_loader(batch_size):
    return DataLoader(test_data, batch_size=batch_size)  # ACL101 ACL102


def make_loader_for(dataset):
    # called by other scripts only
    return DataLoader(dataset, batch_size=128)  # ACL101 ACL102


class Evaluator:
    def __init__(self, dataset):
        self.loader = DataLoader(dataset, batch_size=256)  # ACL101 ACL102

    def accuracy(self, model):
        correct = 0
        with torch.no_grad():
            for x, y in self.loader:
                correct += (model(x.to(device)).argmax(1) == y.to(device)).sum().item()
        return correct / len(self.loader.dataset)


model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)  # ACL309
test_loader = make_test_loader(1000)
evaluator = Evaluator(test_data)
for epoch in range(2):
    for x, y in train_loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()  # ACL207
    print(f"epoch {epoch}: accuracy {evaluator.accuracy(model):.3f}")
