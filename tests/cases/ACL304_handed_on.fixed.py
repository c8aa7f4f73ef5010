# target-torch: 2.4
# ACL304: a name handed on uncalled keeps its import; its calls are spelled torch.amp.X.
import contextlib

import torch
from torch.cuda.amp import GradScaler, autocast

amp_autocast = autocast if GradScaler is not None else contextlib.nullcontext
scaler = torch.amp.GradScaler("cuda")
with torch.amp.autocast("cuda"):
    pass
with amp_autocast():
    pass
