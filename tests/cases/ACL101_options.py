# option: ACL101.num-workers = 4
import torch
from torchvision.datasets import MNIST


def main():
    loader = torch.utils.data.DataLoader(MNIST("data"), batch_size=2)  # ACL101
    return loader


if __name__ == "__main__":
    main()
