"""Where torch models run: ``auto`` (CUDA when torch sees one, else the CPU), ``cpu``, ``cuda``, ``cuda:N``."""

from __future__ import annotations

import re

import torch

from dmlcore.errors import DMLCoreError

DEVICE_CHOICES = "auto, cpu, cuda or cuda:N"


def cuda_count() -> int:
    """How many CUDA devices torch sees (0 without CUDA); tests replace this to fake a machine."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve_device(spec: str | torch.device | None = "auto") -> torch.device:
    """The torch device for ``spec``; a one-line DMLCoreError when it names CUDA that torch cannot see."""
    if isinstance(spec, torch.device):
        spec = str(spec)
    spec = "auto" if spec is None else str(spec).strip().lower()
    if spec == "auto":
        return torch.device("cuda:0" if cuda_count() else "cpu")
    if spec == "cpu":
        return torch.device("cpu")
    match = re.fullmatch(r"cuda(?::(\d+))?", spec)
    if not match:
        raise DMLCoreError(f"device must be {DEVICE_CHOICES}; got {spec!r}.")
    count = cuda_count()
    if count == 0:
        built = torch.version.cuda or "none (a CPU-only build)"
        raise DMLCoreError(f"device {spec!r} asked for CUDA, but torch {torch.__version__} sees no CUDA device "
                           f"(its CUDA: {built}); use --device cpu or auto, or install the CUDA build "
                           f"(requirements-cuda.txt).")
    index = int(match.group(1) or 0)
    if index >= count:
        raise DMLCoreError(f"device {spec!r}: torch sees {count} CUDA device(s), cuda:0 to cuda:{count - 1}.")
    return torch.device(f"cuda:{index}")


def gpus_needed(spec: str | None = "auto", available: int | None = None, *, networks: bool = True) -> int:
    """GPUs a task must reserve (0 or 1) to fit on device ``spec``, for executors such as Ray.

    ``networks`` False (a fit that trains no torch network of dmlcore:
    :func:`dmlcore.estimators.trains_networks` of its config) needs none. ``available`` is how
    many GPUs the executor can hand out (default: those torch sees here; a Ray driver passes the
    cluster's). "auto" takes one when there is one, "cpu" none; "cuda" or "cuda:N" takes one
    and is refused when none is available. A task given one GPU sees it as cuda:0, so give such
    tasks "auto" or "cuda" rather than "cuda:N".
    """
    if not networks:
        return 0
    spec = "auto" if spec is None else str(spec).strip().lower()
    available = cuda_count() if available is None else int(available)
    if spec == "auto":
        return 1 if available > 0 else 0
    if spec == "cpu":
        return 0
    if not re.fullmatch(r"cuda(?::\d+)?", spec):
        raise DMLCoreError(f"device must be {DEVICE_CHOICES}; got {spec!r}.")
    if available == 0:
        raise DMLCoreError(f"device {spec!r} asked for a GPU, but none is available to this executor; "
                           f"use device auto or cpu.")
    return 1
