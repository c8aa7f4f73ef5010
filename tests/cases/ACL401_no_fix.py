# ACL401: found, but the devices come from the command line: the finding says so and
# offers no fix.
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--gpus", type=int, nargs="+", default=[0])
args = parser.parse_args()

dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(dataset, batch_size=16, num_workers=2, pin_memory=True)  # ACL104 ACL106
model = nn.DataParallel(nn.Linear(4, 1).cuda(args.gpus[0]), device_ids=args.gpus)  # ACL401
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x.cuda()), y.cuda())  # ACL103 ACL103
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()  # ACL207
