# option: ACL101.num-workers = 4
import torch

loader = torch.utils.data.DataLoader(torch.arange(10), batch_size=2)  # ACL101
