# ACL101: DataLoaders that are not PyTorch's are never flagged.
import torch
from torch_geometric.loader import DataLoader
from mylib import data

graphs = DataLoader([1, 2, 3])
other = data.DataLoader([1, 2, 3])
if torch.cuda.is_available():
    from monai.data import DataLoader as MonaiLoader

    m = MonaiLoader([1])
