# ACL406: `torch.distributed.launch` run from code: imported, through runpy, through
# subprocess with an argument list or a shell string. No fix: the launched script must
# first read LOCAL_RANK. Help texts and comments that name the launcher are not flagged.
import argparse
import os
import runpy
import subprocess
import sys

import torch.distributed.launch
from torch.distributed import launch as old_launch
from torch.distributed.launch import main as launch_main

parser = argparse.ArgumentParser(
    epilog="run with: python -m torch.distributed.launch --nproc_per_node=8 train.py"
)
parser.add_argument("--gpus", type=int, default=2)
args = parser.parse_args()

command = [sys.executable, "-m", "torch.distributed.launch", f"--nproc_per_node={args.gpus}"]
subprocess.run(command + ["train.py"], check=True)
subprocess.call(
    f"python -m torch.distributed.launch --nproc_per_node={args.gpus} train.py", shell=True
)
os.system("python -m torch.distributed.launch --nproc_per_node 2 eval.py")
runpy.run_module("torch.distributed.launch", run_name="__main__")
subprocess.run([sys.executable, "-m", "torch.distributed.run", "train.py"], check=True)
print("launched with torch.distributed.launch")
