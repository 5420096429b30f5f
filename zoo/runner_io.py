"""Running a .pte through the C++ runner with given inputs, reading its outputs back as tensors."""

import os
import subprocess

import torch


def run(runner, pte, inputs, workdir, method="forward", runs=1, extra_args=(), timeout=600):
    """Runs `method` of `pte` on `inputs` (tensors, fed as raw files); outputs land in `workdir` (read_outputs).
    Returns the CompletedProcess."""
    os.makedirs(workdir, exist_ok=True)
    args = [runner, str(pte), "--method", method, "--runs", str(runs), "--output-dir", str(workdir), *extra_args]
    for i, x in enumerate(inputs):
        path = os.path.join(workdir, f"input_{i}.bin")
        with open(path, "wb") as f:
            f.write(x.contiguous().numpy().tobytes())
        # With its shape: a bounded dynamic input takes it for this run (a static one must match it anyway).
        args += ["--input", f"{path}@[{','.join(str(d) for d in x.shape)}]"]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def read_outputs(workdir, like):
    """The runner's raw outputs as tensors with the dtypes and shapes of `like`."""
    outs = []
    for i, ref in enumerate(like):
        with open(os.path.join(workdir, f"output_{i}.bin"), "rb") as f:
            data = bytearray(f.read())
        outs.append(torch.frombuffer(data, dtype=ref.dtype).reshape(ref.shape))
    return outs
