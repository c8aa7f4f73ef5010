# No `import torch` yet: the fix adds it.
import torch.nn as nn

net = nn.Linear(8, 2)


def evaluate(net, data_loader):
    net.eval()
    return [net(x).argmax(1).tolist() for x in data_loader]


def infer(net, data_loader):
    outputs = []
    for x in data_loader:  # ACL311
        outputs.extend(net(x).argmax(1).tolist())
    return outputs
