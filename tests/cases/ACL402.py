# ACL402 (target torch: latest): flagged only where the block sets a dtype other than the
# device's default, or cache_enabled=False, and the wrapped class's forward does not
# enter autocast itself.
import torch
import torch.nn as nn
import torchvision
from torch.cuda.amp import autocast


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 32)

    # comments above the method stay above its decorators
    @torch.no_grad()
    def forward(self, x):
        return self.fc(x)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc(x)


class Decorated(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 4)

    @torch.autocast("cuda", dtype=torch.bfloat16)
    def forward(self, x):
        return self.fc(x)


class Inside(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 4)

    def forward(self, x):
        with torch.amp.autocast("cuda", dtype=torch.bfloat16):
            return self.fc(x)


x = torch.randn(8, 32).cuda()  # ACL203
encoder = Encoder().cuda()
encoder = nn.DataParallel(encoder)  # ACL401
head = nn.DataParallel(Head().cuda())  # ACL401
decorated = nn.DataParallel(Decorated().cuda())  # ACL401
inside = nn.DataParallel(Inside().cuda())  # ACL401
resnet = nn.DataParallel(torchvision.models.resnet18().cuda())  # ACL401

# flagged; the fix decorates Encoder.forward (every call of `encoder` is in such a block)
with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
    features = encoder(x)  # ACL402
with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
    features = encoder(x)  # ACL402

# flagged without a fix: `head` also runs outside autocast, where the decorator would
# change it
with torch.cuda.amp.autocast(True, torch.bfloat16):
    logits = head(features)  # ACL402
logits = head(features.float())

# flagged without a fix: resnet18's forward is not in this file
with autocast(cache_enabled=False):
    resnet(torch.randn(2, 3, 64, 64).cuda())  # ACL203 ACL402

# not flagged: the default dtype, autocast disabled, the CPU (DataParallel runs no threads
# there), forwards that autocast themselves, a call that runs later
with torch.autocast("cuda"):
    head(features)
with torch.autocast("cuda", dtype=torch.float16):
    head(features)
with torch.autocast(x.device.type, dtype=torch.half):
    head(features)
with torch.autocast("cpu", dtype=torch.float16):
    head(features)
with torch.autocast("cuda", dtype=torch.bfloat16, enabled=False):
    head(features)
with torch.autocast("cuda", dtype=torch.bfloat16):
    decorated(x)
    inside(x)

    def later():
        return head(x)
