# ACL201: code that reads a conv's bias gets None after the fix. A read that
# checks for None (or cannot reach a conv) leaves the fix on; one that does not
# turns the fix off for the convs it can reach.
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, bias=False)
        self.stem_bn = nn.BatchNorm2d(16)
        self.mid = nn.Conv2d(16, 16, 3)
        self.mid_bn = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif type(m) is nn.LayerNorm:
                m.bias.data.zero_()
        for m in self.modules():
            if getattr(m, "bias", None) is None:
                continue
            m.bias.data.mul_(0.5)
        nn.init.zeros_(self.fc.bias)
        nn.init.constant_(self.mid.bias, 0.1)  # mid's bias is used: no fix for mid

    def forward(self, x):
        x = self.stem_bn(self.stem(x))
        x = self.mid_bn(self.mid(x))
        return self.fc(x.mean((2, 3)))
