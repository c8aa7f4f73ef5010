# target-torch: 2.4
# ACL304: a name handed on uncalled keeps its import; its calls are spelled torch.amp.X.
import contextlib

from torch.cuda.amp import GradScaler, autocast

amp_autocast = autocast if GradScaler is not None else contextlib.nullcontext  # ACL304
scaler = GradScaler()  # ACL304
with autocast():  # ACL304
    pass
with amp_autocast():
    pass
