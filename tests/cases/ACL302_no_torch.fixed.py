# ACL302: a file that never imports torch is not ours to judge.
from mylib import make_optimizer

opt = make_optimizer()
opt.zero_grad(set_to_none=False)
