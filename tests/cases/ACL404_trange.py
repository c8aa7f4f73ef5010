# ACL404: the legacy transformers examples' epoch loop, `for _ in train_iterator` over
# `train_iterator = trange(...)`, with a sampler that is a RandomSampler when not
# distributed. The fix names the loop variable and calls `set_epoch` only when the
# sampler is a DistributedSampler.
import argparse

import torch
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm, trange


def train(args, train_dataset, model, optimizer, scheduler):
    train_sampler = RandomSampler(train_dataset) if args.local_rank == -1 else DistributedSampler(train_dataset)  # ACL404
    train_dataloader = DataLoader(train_dataset, sampler=train_sampler, batch_size=args.train_batch_size)  # ACL101
    global_step, tr_loss = 0, 0.0
    model.zero_grad()
    train_iterator = trange(int(args.num_train_epochs), desc="Epoch", disable=args.local_rank not in [-1, 0])
    for _ in train_iterator:
        epoch_iterator = tqdm(train_dataloader, desc="Iteration", disable=args.local_rank not in [-1, 0])
        for step, batch in enumerate(epoch_iterator):
            model.train()
            outputs = model(**{k: v.to(args.device) for k, v in batch.items()})
            loss = outputs[0]
            if args.gradient_accumulation_steps > 1:
                loss = loss / args.gradient_accumulation_steps
            loss.backward()
            tr_loss += loss.item()  # ACL308
            if (step + 1) % args.gradient_accumulation_steps == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                scheduler.step()
                model.zero_grad()
                global_step += 1
    return global_step, tr_loss / max(global_step, 1)


def train_steps(args, train_dataset, model, optimizer):
    # `_` is read in the body: renaming it would change what that read sees
    sampler = DistributedSampler(train_dataset)  # ACL404
    loader = DataLoader(train_dataset, sampler=sampler, batch_size=8)  # ACL101
    for _ in trange(int(args.num_train_epochs), desc="Epoch"):
        print("epoch", _)
        for batch in loader:
            model(**batch)[0].backward()
            optimizer.step()


def evaluate(args, eval_dataset, model):
    eval_sampler = SequentialSampler(eval_dataset) if args.local_rank == -1 else DistributedSampler(eval_dataset)
    eval_dataloader = DataLoader(eval_dataset, sampler=eval_sampler, batch_size=args.eval_batch_size)  # ACL101
    for batch in tqdm(eval_dataloader, desc="Evaluating"):
        with torch.no_grad():
            model(**batch)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--num_train_epochs", type=float, default=3.0)
    args = parser.parse_args()
    if args.local_rank != -1:
        torch.distributed.init_process_group(backend="nccl")
    return args
