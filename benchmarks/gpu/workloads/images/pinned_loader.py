"""Training fed by worker processes into pinned memory, over short epochs.

What accel-lint finds here: the batches are copied to the GPU with blocking
copies although the loader pins them (ACL103), and the workers are started
again at every epoch (ACL104), which short epochs pay for every time.
"""

import argparse

import torch
import torch.nn.functional as F
from data import SIZES, CompressedImages, make_model
from torch.utils.data import DataLoader


def main():
    parser = argparse.ArgumentParser(description="pinned loader workers, short epochs")
    parser.add_argument("--size", choices=sorted(SIZES), default="full")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--no-cuda", action="store_true", help="train on the CPU")
    args = parser.parse_args()
    size = SIZES[args.size]
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")

    torch.manual_seed(0)
    # A quarter of the images per epoch: the short epochs of a small fine-tuning set.
    dataset = CompressedImages(size["images"] // 4, size["resolution"])
    loader = DataLoader(
        dataset, batch_size=size["batch"], shuffle=False, num_workers=2, pin_memory=True
    )
    model = make_model(size["resolution"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    for epoch in range(args.epochs):
        for images, labels in loader:
            images = images.to(device)
            labels = labels.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
