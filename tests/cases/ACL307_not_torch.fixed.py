# Chainer also spells `loss.backward()`: a file that never imports torch is not ours.
import chainer.functions as F
from chainer import optimizers


def train(model, loader):
    optimizer = optimizers.SGD()
    optimizer.setup(model)
    total = 0
    for x, t in loader:
        loss = F.softmax_cross_entropy(model(x), t)
        model.cleargrads()
        loss.backward()
        optimizer.update()
        total += loss
    return total
