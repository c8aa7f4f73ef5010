# ACL201: a list of layers whose norm is appended only under `if batch_norm:`
# (the conv, the optional norm, then the activation): the conv feeds the norm
# exactly when the test holds, so the fix writes the test into the constructor.
# A norm on both branches is the plain `bias=False`; a test the constructor
# cannot read the same is reported without a fix; a test rebound after the conv
# is not reported.
import torch.nn as nn


def vgg_layers(cfg, batch_norm=False):
    layers = []
    input_channel = 3
    for width in cfg:
        if width == "M":
            layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            continue

        layers += [nn.Conv2d(input_channel, width, kernel_size=3, padding=1, bias=not batch_norm)]

        if batch_norm:
            layers += [nn.BatchNorm2d(width)]

        layers += [nn.ReLU(inplace=True)]
        input_channel = width

    return nn.Sequential(*layers)


class UNetDown(nn.Module):
    def __init__(self, in_size, out_size, normalize=True, dropout=0.0):
        super().__init__()
        layers = [nn.Conv2d(in_size, out_size, 4, 2, 1, bias=not normalize)]
        if normalize:
            layers.append(nn.InstanceNorm2d(out_size))
        layers.append(nn.LeakyReLU(0.2))
        if dropout:
            layers.append(nn.Dropout(dropout))
        self.model = nn.Sequential(*layers)

    def forward(self, x):
        return self.model(x)


def plain_unless_asked(channels, plain=False):
    layers = []
    for cin, cout in zip(channels, channels[1:]):
        layers.append(nn.Conv2d(cin, cout, 3, padding=1, bias=bool(plain)))
        if not plain:
            layers.append(nn.BatchNorm2d(cout))
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def batch_or_group_norm(channels, bn=True):
    layers = []
    for cin, cout in zip(channels, channels[1:]):
        conv = nn.Conv2d(cin, cout, 3, padding=1, bias=not bn)
        layers.append(conv)
        if bn:
            layers.append(nn.BatchNorm2d(cout))
        else:
            layers.append(nn.GroupNorm(8, cout))
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def norm_on_both_branches(channels, slow_bn=False):
    layers = []
    for cin, cout in zip(channels, channels[1:]):
        layers.append(nn.Conv2d(cin, cout, 3, padding=1, bias=False))
        if slow_bn:
            layers.append(nn.BatchNorm2d(cout, momentum=0.01))
        else:
            layers.append(nn.BatchNorm2d(cout))
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def test_from_a_dict(channels, opts):
    layers = []
    for cin, cout in zip(channels, channels[1:]):
        layers.append(nn.Conv2d(cin, cout, 3, padding=1))
        if opts.get("bn"):
            layers.append(nn.BatchNorm2d(cout))
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def test_rebound_after_the_conv(channels, batch_norm=True):
    layers = []
    for i, (cin, cout) in enumerate(zip(channels, channels[1:])):
        layers.append(nn.Conv2d(cin, cout, 3, padding=1))
        batch_norm = i > 0  # the test changes between the constructor and the `if`
        if batch_norm:
            layers.append(nn.BatchNorm2d(cout))
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def bias_already_off(channels, batch_norm=True):
    layers = []
    for cin, cout in zip(channels, channels[1:]):
        layers.append(nn.Conv2d(cin, cout, 3, padding=1, bias=False))
        if batch_norm:
            layers.append(nn.BatchNorm2d(cout))
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def norm_not_right_after(channels, bn=True):
    layers = []
    for cin, cout in zip(channels, channels[1:]):
        layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.LeakyReLU(0.2)]
        if bn:
            layers.append(nn.BatchNorm2d(cout))
    return nn.Sequential(*layers)


def branch_does_more(channels, bn=True):
    layers = []
    for cin, cout in zip(channels, channels[1:]):
        layers.append(nn.Conv2d(cin, cout, 3, padding=1))
        if bn:
            layers.append(nn.BatchNorm2d(cout))
            print("normed", cout)  # not only list extensions: not read
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def returned_list(cin, cout, normalize=True):
    layers = [nn.Conv2d(cin, cout, 4, 2, 1)]
    if normalize:
        layers.append(nn.BatchNorm2d(cout))
    return layers  # the caller may put anything between them


class Regressor(nn.Module):
    """The norm chosen by a conditional expression right after the conv."""

    def __init__(self, cin, cout, use_bn=True):
        super().__init__()
        self.regressor = nn.Sequential(
            nn.Conv2d(cin, cin, 3, 1, 1, bias=not use_bn),
            nn.BatchNorm2d(cin) if use_bn else nn.Sequential(),
            nn.ReLU(inplace=True),
            nn.Conv2d(cin, cout, 3, 1, 1, bias=False),
            nn.BatchNorm2d(cout) if use_bn else nn.BatchNorm2d(cout, affine=False),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False) if use_bn else nn.Identity(),
            nn.BatchNorm2d(cout),
        )

    def forward(self, x):
        return self.regressor(x)


def chosen_by_a_lookup(cin, cout, opts):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3),
        nn.BatchNorm2d(cout) if opts["bn"] else nn.Identity(),
    )
