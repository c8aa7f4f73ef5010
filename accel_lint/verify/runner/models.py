"""The models a run trains: found, named the same way on both sides of a
comparison, snapshotted, compared with a reference, aligned at the start."""

from __future__ import annotations

import hashlib
import os
import random
from typing import Any

from ..protocol import DiffRecord, InitEvent, StateDictCheck, TensorRow
from .records import live_instances, strip_wrappers, tensor_bytes


def optimizer_params(optimizer: Any) -> list[Any]:
    return [p for group in optimizer.param_groups for p in group["params"]]


class Models:
    """Root modules, kept alive from the first step of each optimizer: models built
    inside main() would otherwise be collected before the snapshot."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.save = torch.save  # before the runner wraps it: our files are not the script's
        self.roots: list[Any] = []
        self.param_keys: dict[int, tuple[int, str]] = {}  # id(param) -> (root, local name)

    # -- finding and naming ---------------------------------------------------------

    def roots_of(self, params: list[Any] | None) -> list[Any]:
        """Top-level modules (unwrapped from DataParallel/DDP/torch.compile) that own
        one of `params` (any parameter when None), ordered by where their first
        parameter sits in the list, so both sides of a comparison name them alike."""
        module_class = self.torch.nn.Module
        modules = live_instances(module_class)
        children = {id(c) for m in modules for c in m._modules.values() if c is not None}
        position = {id(p): i for i, p in enumerate(params or [])}
        ranked: list[tuple[int, Any]] = []
        seen: set[int] = set()
        for index, module in enumerate(modules):
            if id(module) in children:
                continue
            root = self.unwrap(module)
            if id(root) in seen:
                continue
            seen.add(id(root))
            if params is None:
                if any(True for _ in root.parameters()):
                    ranked.append((index, root))
                continue
            first = min(
                (position[id(p)] for p in root.parameters() if id(p) in position), default=None
            )
            if first is not None:
                ranked.append((first, root))
        ranked.sort(key=lambda item: item[0])
        return [root for _, root in ranked]

    def unwrap(self, module: Any) -> Any:
        torch = self.torch
        wrappers = (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)
        while True:
            if isinstance(module, wrappers) and isinstance(
                getattr(module, "module", None), torch.nn.Module
            ):
                module = module.module
            elif isinstance(getattr(module, "_orig_mod", None), torch.nn.Module):  # compile
                module = module._orig_mod
            else:
                return module

    def adopt(self, optimizer: Any) -> None:
        for root in self.roots_of(optimizer_params(optimizer)):
            if not any(root is r for r in self.roots):
                self.roots.append(root)
                index = len(self.roots) - 1
                for name, p in root.named_parameters():
                    self.param_keys.setdefault(id(p), (index, strip_wrappers(name)))

    @staticmethod
    def names(roots: list[Any]) -> list[str]:
        classes = [type(r).__name__ for r in roots]
        seen: dict[str, int] = {}
        names = []
        for cls in classes:
            i = seen.get(cls, 0)
            seen[cls] = i + 1
            names.append(f"{cls}#{i}" if classes.count(cls) > 1 else cls)
        return names

    def named_tensors(
        self, roots: list[Any], params: list[Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        named_params: dict[str, Any] = {}
        named_buffers: dict[str, Any] = {}
        covered: set[int] = set()
        for prefix, root in zip(self.names(roots), roots):
            for name, p in root.named_parameters():
                named_params.setdefault(f"{prefix}.{strip_wrappers(name)}", p)
                covered.add(id(p))
            for name, b in root.named_buffers():
                named_buffers.setdefault(f"{prefix}.{strip_wrappers(name)}", b)
        for i, p in enumerate(params):
            if id(p) not in covered:  # a bare tensor handed to the optimizer
                named_params[f"optimizer.param{i}"] = p
        return named_params, named_buffers

    def key(self, param: Any) -> tuple[int, str]:
        return self.param_keys.setdefault(id(param), (-1, f"optimizer.param{len(self.param_keys)}"))

    def key_name(self, key: tuple[int, str], names: list[str]) -> str:
        root, local = key
        return f"{names[root]}.{local}" if 0 <= root < len(names) else local

    # -- the final state --------------------------------------------------------------

    def snapshot(self, optimizers: list[Any]) -> tuple[dict[str, str], dict[str, Any]]:
        kinds: dict[str, str] = {}
        tensors: dict[str, Any] = {}
        params = [p for o in optimizers for p in optimizer_params(o)]
        named_params, named_buffers = self.named_tensors(self.roots, params)
        for kind, table in (("param", named_params), ("buffer", named_buffers)):
            for name, t in table.items():
                kinds[name] = kind
                tensors[name] = t.detach().cpu().clone()
        return kinds, tensors

    def diff(self, kinds: dict[str, str], tensors: dict[str, Any], reference: str) -> DiffRecord:
        """Per-tensor difference to the reference run's final state."""
        torch = self.torch
        ref = torch.load(reference, weights_only=False)
        ref_tensors: dict[str, Any] = ref["tensors"]
        ref_kinds: dict[str, str] = ref["kinds"]
        rows: list[TensorRow] = []
        for name, ours in tensors.items():
            theirs = ref_tensors.get(name)
            if theirs is None:
                continue
            shape = tuple(ours.shape) == tuple(theirs.shape)
            equal = shape and bool(torch.equal(ours, theirs))
            max_abs: float | None = 0.0 if equal else None
            rel_norm: float | None = 0.0 if equal else None
            if shape and not equal:
                a, b = ours.double(), theirs.double()
                d = a - b
                scale = max(float(a.norm()), float(b.norm()), 1e-30)
                max_abs, rel_norm = float(d.abs().max()), float(d.norm()) / scale
            row: TensorRow = {
                "name": name,
                "kind": kinds[name],
                "shape": shape,
                "equal": equal,
                "max_abs": max_abs,
                "rel_norm": rel_norm,
            }
            rows.append(row)
        return {
            "tensors": rows,
            "missing": sorted((n, ref_kinds[n]) for n in ref_tensors if n not in tensors),
            "extra": sorted((n, kinds[n]) for n in tensors if n not in ref_tensors),
        }

    # -- the initial state -------------------------------------------------------------

    def dump_init(
        self, path: str, params: dict[str, Any], buffers: dict[str, Any], rng: bool
    ) -> None:
        state: dict[str, Any] = {
            "params": {n: t.detach().cpu().clone() for n, t in params.items()},
            "buffers": {n: t.detach().cpu().clone() for n, t in buffers.items()},
        }
        if rng:
            state["rng"] = self.rng_state()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.save(state, path)

    def align(
        self, path: str, index: int, params: dict[str, Any], buffers: dict[str, Any]
    ) -> InitEvent | None:
        """Start from the reference run's initial weights and RNG state when the fix
        changed the set of parameters (a removed bias no longer consumes random
        numbers, which shifts every later initialisation and shuffle)."""
        if not os.path.exists(path):
            return None
        torch = self.torch
        ref = torch.load(path, weights_only=False)
        ref_params: dict[str, Any] = ref["params"]
        ref_buffers: dict[str, Any] = ref["buffers"]
        ours = {n: tuple(t.shape) for n, t in params.items()}
        theirs = {n: tuple(t.shape) for n, t in ref_params.items()}
        if ours == theirs:
            return {
                "optimizer": index,
                "aligned": False,
                "differs": sorted(
                    n for n, t in params.items() if not torch.equal(t.detach().cpu(), ref_params[n])
                ),
            }
        copied = 0
        with torch.no_grad():
            for mine, reference in ((params, ref_params), (buffers, ref_buffers)):
                for name, tensor in mine.items():
                    source = reference.get(name)
                    if source is not None and tuple(source.shape) == tuple(tensor.shape):
                        tensor.copy_(source.to(tensor.device))
                        copied += 1
        if index == 0 and "rng" in ref:
            self.set_rng_state(ref["rng"])
        return {
            "optimizer": index,
            "aligned": True,
            "copied": copied,
            "removed": sorted(set(theirs) - set(ours)),
            "added": sorted(set(ours) - set(theirs)),
        }

    def perturb(self, params: list[Any]) -> None:
        """Move every nonzero float weight by one unit in the last place: a relative
        perturbation the size of a reordered floating-point sum, to measure how the
        script amplifies it (a zero would move to a denormal: no relative size)."""
        torch = self.torch
        with torch.no_grad():
            for p in params:
                if p.is_floating_point():
                    moved = torch.nextafter(p, torch.full_like(p, float("inf")))
                    p.copy_(torch.where(p != 0, moved, p))

    def cuda_used(self) -> bool:
        torch = self.torch
        return bool(torch.cuda.is_available() and torch.cuda.is_initialized())

    def rng_state(self) -> dict[str, Any]:
        torch = self.torch
        state: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
        try:
            import numpy

            state["numpy"] = numpy.random.get_state()
        except ImportError:
            pass
        if self.cuda_used():
            state["cuda"] = torch.cuda.get_rng_state_all()
        return state

    def set_rng_state(self, state: dict[str, Any]) -> None:
        torch = self.torch
        torch.set_rng_state(state["torch"])
        random.setstate(state["python"])
        if "numpy" in state:
            import numpy

            numpy.random.set_state(state["numpy"])
        if "cuda" in state and self.cuda_used():
            torch.cuda.set_rng_state_all(state["cuda"])

    # -- saved checkpoints --------------------------------------------------------------

    def state_dicts(self, obj: Any) -> list[StateDictCheck]:
        """Every model's state dict inside a saved object (the object itself, or a
        value of a dict or list), held against the bare models: would
        `load_state_dict(..., strict=True)` of one of them accept it? That is: the
        same keys, the same shapes (what strict loading checks before copying).

        A dict of tensors is a model's state dict when, wrapper prefixes aside, it has
        a trained model's keys and shapes; others (an optimizer's per-parameter
        `{"momentum_buffer": t}`) are not checkpoints of a model and are left out."""
        found: list[dict[str, Any]] = []
        _collect_state_dicts(obj, self.torch, found, 0)
        if not found:
            return []
        bare = self.roots or self.roots_of(None)
        shapes = [
            (name, {k: tuple(v.shape) for k, v in root.state_dict().items()})
            for name, root in zip(self.names(bare), bare)
        ]
        checks: list[StateDictCheck] = []
        for sd in found:
            mine = {k: tuple(v.shape) for k, v in sd.items()}
            unwrapped = {strip_wrappers(k): shape for k, shape in mine.items()}
            if not any(theirs == unwrapped for _, theirs in shapes):
                continue
            loads = next((name for name, theirs in shapes if theirs == mine), None)
            digest = hashlib.sha256()
            for key in sorted(sd, key=strip_wrappers):
                digest.update(strip_wrappers(key).encode())
                digest.update(tensor_bytes(sd[key]))
            checks.append(
                {
                    "keys": len(sd),
                    "values": digest.hexdigest()[:16],
                    "loads_into": loads,
                    "prefixed": sum(1 for k in sd if strip_wrappers(k) != k),
                }
            )
        return checks


def _collect_state_dicts(obj: Any, torch: Any, found: list[dict[str, Any]], depth: int) -> None:
    if depth > 3:
        return
    if isinstance(obj, dict):
        if obj and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items()):
            found.append(obj)
            return
        for value in obj.values():
            _collect_state_dicts(value, torch, found, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            _collect_state_dicts(value, torch, found, depth + 1)
