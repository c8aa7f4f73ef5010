# ACL201: a conv bound to a name that feeds a norm in one branch and an activation in
# the other (a VGG-style `batch_norm` flag): reported, and the fix writes the branch
# test, so the bias stays where no norm follows. A test that may change between the
# constructor and the `if` gets no finding.
import torch.nn as nn

CONFIGS = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
}


def make_layers(cfg, batch_norm=False):
    layers = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
        else:
            conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)  # ACL201
            if batch_norm:
                layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
            else:
                layers += [conv2d, nn.ReLU(inplace=True)]
            in_channels = v
    return nn.Sequential(*layers)


def make_plain_or_normed(channels, norm="batch"):
    layers = []
    for i, (cin, cout) in enumerate(zip(channels, channels[1:])):
        conv = nn.Conv2d(cin, cout, 3, padding=1, bias=True)  # ACL201
        if norm != "batch":
            layers.append(conv)
            layers.append(nn.LeakyReLU(0.2))
        else:
            layers.extend([conv, nn.BatchNorm2d(cout), nn.LeakyReLU(0.2)])
    return nn.Sequential(*layers)


def make_changing_flag(channels, batch_norm=True):
    layers = []
    for i, (cin, cout) in enumerate(zip(channels, channels[1:])):
        conv = nn.Conv2d(cin, cout, 3, padding=1)
        batch_norm = i > 0  # the test is rebound in the loop: no finding
        if batch_norm:
            layers += [conv, nn.BatchNorm2d(cout), nn.ReLU()]
        else:
            layers += [conv, nn.ReLU()]
    return nn.Sequential(*layers)


def make_also_returned(cin, cout, batch_norm):
    conv = nn.Conv2d(cin, cout, 3)
    if batch_norm:
        block = nn.Sequential(conv, nn.BatchNorm2d(cout))
    else:
        block = nn.Sequential(conv, nn.ReLU())
    return block, conv  # its output may go anywhere: no finding


class VGG(nn.Module):
    def __init__(self, features, num_classes=1000):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(), nn.Linear(4096, num_classes)
        )
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        return self.classifier(self.avgpool(self.features(x)).flatten(1))


def vgg11_bn(**kwargs):
    return VGG(make_layers(CONFIGS["A"], batch_norm=True), **kwargs)
