# ACL401: the script sits in `if __name__ == "__main__":`, imports classes by name, passes
# DataLoader arguments by position, moves the wrapped model, indents by two spaces.
import torch
from torch import nn
from torch.nn.parallel import DataParallel
from torch.utils.data import DataLoader, TensorDataset


def build():
  return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))


if __name__ == "__main__":
  torch.manual_seed(0)
  device = "cuda" if torch.cuda.is_available() else "cpu"
  data = TensorDataset(torch.randn(256, 8), torch.randn(256, 1))
  # batches of 32, in order
  loader = DataLoader(data, 32, False, num_workers=2, pin_memory=True)  # ACL104 ACL106
  model = DataParallel(build(), device_ids=[0, 1]).to(device)  # ACL401
  opt = torch.optim.SGD(model.parameters(), lr=0.01)
  for _ in range(3):
    for x, y in loader:
      loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))  # ACL103 ACL103
      opt.zero_grad()
      loss.backward()
      opt.step()  # ACL207
  print("final loss", loss.item())
  torch.save(model.state_dict(), "final.pt")  # ACL411
