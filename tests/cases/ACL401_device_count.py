# ACL401: the GPU count comes from the command line and only picks the devices (the
# shape of pytorch-image-models' scripts, `device_ids=list(range(args.num_gpu))`), and
# the wrap is chained with module methods that return the module.
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--num-gpu", type=int, default=1, help="number of GPUs to use")
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

dataset = TensorDataset(torch.randn(128, 8), torch.randn(128, 1))
loader = DataLoader(dataset, batch_size=32, shuffle=False, num_workers=2, pin_memory=True)  # ACL104 ACL106
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
if args.num_gpu > 1:
    model = nn.DataParallel(model, device_ids=list(range(args.num_gpu))).train().to(device)  # ACL401
    torch.backends.cudnn.benchmark = True
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(args.epochs):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))  # ACL103 ACL103
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()  # ACL207
    print(f"epoch {epoch}: {loss.item():.4f}")
