"""What a job ran on, as its stats and the cost calibration name it."""

from __future__ import annotations

import platform


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what the platform says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def add_device_time(devices: dict[str, dict], label: str, measured: dict) -> None:
    """Add one device's `measured` generation (kind, units, new_tokens, seconds) into `devices`,
    which sums them by device label."""
    total = devices.setdefault(label, {"kind": measured["kind"], "units": measured["units"], "new_tokens": 0,
                                       "seconds": 0.0})
    total["new_tokens"] += measured["new_tokens"]
    total["seconds"] += measured["seconds"]


def deterministic_torch(seed: int, threads: int) -> None:
    """Seed torch, fix its thread count and require deterministic kernels. The kernels are required
    through torch's own switch rather than torch.use_deterministic_algorithms, which also sets
    torch.compile's flag: importing that config pulls in TorchDynamo, 1.1 CPU-s per job on the
    test machine with a bytecode cache (5 without one), and nothing here compiles."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch._C._set_deterministic_algorithms(True, warn_only=False)  # noqa: SLF001
