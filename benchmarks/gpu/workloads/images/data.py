"""Images stored compressed, as on disk: each item is decompressed, decoded to
float and flipped at random in `__getitem__`, the work a JPEG pipeline does in
its DataLoader workers (zlib stands in for the codec: no torchvision needed)."""

import zlib

import torch
from torch.utils.data import Dataset

SIZES = {
    "small": {"images": 128, "resolution": 16, "batch": 16},
    "full": {"images": 4096, "resolution": 128, "batch": 128},
}
CLASSES = 10


class CompressedImages(Dataset):
    def __init__(self, count, resolution, seed=1234):
        generator = torch.Generator().manual_seed(seed)
        self.seed = seed
        self.resolution = resolution
        # Smooth images compress like photographs do; noise would not compress at all.
        coarse = torch.randint(0, 256, (count, 3, 8, 8), generator=generator, dtype=torch.uint8)
        self.records = []
        for image in coarse:
            full = torch.nn.functional.interpolate(
                image[None].float(), size=(resolution, resolution), mode="bilinear"
            )[0]
            self.records.append(zlib.compress(full.to(torch.uint8).numpy().tobytes(), 6))
        self.labels = torch.randint(0, CLASSES, (count,), generator=generator)

    def __len__(self):
        return len(self.records)

    def __getitem__(self, index):
        raw = zlib.decompress(self.records[index])
        image = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
        image = image.view(3, self.resolution, self.resolution).float().div_(255.0)
        # The item's own generator: the same flips in any worker, in any order.
        generator = torch.Generator().manual_seed(self.seed + index)
        if torch.rand(1, generator=generator).item() < 0.5:
            image = image.flip(2)
        return (image - 0.5) / 0.25, self.labels[index]


def make_model(resolution):
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 5, stride=4, padding=2),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(4),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * 16, CLASSES),
    )
