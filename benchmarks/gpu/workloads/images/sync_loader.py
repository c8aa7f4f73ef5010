"""Training fed by a DataLoader that decodes in the training process.

What accel-lint finds here: the loader has no workers, so every step waits
for its batch to be decoded (ACL101), and its batches are copied to the GPU
from pageable memory (ACL102).
"""

import argparse

import torch
import torch.nn.functional as F
from data import SIZES, CompressedImages, make_model
from torch.utils.data import DataLoader


def main():
    parser = argparse.ArgumentParser(description="decode-bound training, no loader workers")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--no-cuda", action="store_true", help="train on the CPU")
    args = parser.parse_args()
    size = SIZES[args.size]
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")

    torch.manual_seed(0)
    dataset = CompressedImages(size["images"], size["resolution"])
    loader = DataLoader(dataset, batch_size=size["batch"], shuffle=True)
    model = make_model(size["resolution"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    for epoch in range(args.epochs):
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
