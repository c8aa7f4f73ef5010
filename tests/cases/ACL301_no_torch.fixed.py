# ACL301: a file that never imports torch is not ours to judge.
from mylib import Model

model = Model()
for p in model.parameters():
    p.grad.zero_()
