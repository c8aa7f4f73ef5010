# Each way of touching CUDA makes the file a CUDA file.
import torch

use_cuda = torch.cuda.is_available()
loader = torch.utils.data.DataLoader(torch.arange(10), num_workers=2)  # ACL102 ACL106
