"""Issue 17: the plugins on two GPUs, as TensorRT runs them when an engine is built or served on
two devices (clone per device, configure/initialize with that device current) and as a two-GPU
Triton deployment drives them (contexts of one engine on both devices at once).

Needs two GPUs (the `nvidia-h200-x2` kind); on one GPU it skips saying so (the one-GPU cases:
two CUDA contexts in test_plugin_concurrency.py::test_weights_per_device_or_context, 8 threads x 8
streams in test_8_threads_8_streams_cloned_plugins). On a two-GPU machine:

  TRT_ROOTS="$PWD/.trt/10.16;$PWD/.trt/11.1" bash scripts/gpu_check.sh       # builds, runs tests/gpu
  compute-sanitizer --tool memcheck --error-exitcode 9 \\
      python3 -m pytest -m gpu -s -p no:cacheprovider tests/gpu/test_two_gpus.py
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_plugin_concurrency import bare_skip_norm, enqueue, ready, skip_norm  # noqa: E402

from plugin_harness import HALF  # noqa: E402
from trtplugins.ops import skip_norm as skip_norm_op  # noqa: E402

HIDDEN, ROWS, ITERS = 4096, 256, 400


@pytest.fixture
def two(torch):
    n = torch.cuda.device_count()
    if n < 2:
        pytest.skip(f"needs two GPUs (this machine has {n}): run on the nvidia-h200-x2 kind")
    return (0, 1)


def inputs(torch, device, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(ROWS, HIDDEN, generator=g).half().to(device)
    skip = torch.randn(ROWS, HIDDEN, generator=g).half().to(device)
    return x, skip


def check_reference(torch, out, x, skip, w):
    """Against the float64 numpy reference, at the FP16 tolerance of tests/gpu/test_kernels.py."""
    gamma, beta, bias = w
    ref = skip_norm_op.reference(x.double().cpu().numpy(), skip.double().cpu().numpy(), gamma=gamma, beta=beta,
                              bias=bias, norm="layer", epsilon=1e-5)
    got = out.double().cpu().numpy()
    scale = max(float(np.abs(ref).max()), 1.0)
    assert np.isfinite(got).all()
    assert (np.abs(got - ref) <= 2e-3 * scale + 2e-3 * np.abs(ref)).all()


def run(torch, plugin, device, x, skip, want, iters, failures, label):
    try:
        with torch.cuda.device(device):
            stream = torch.cuda.Stream(device)
            out = torch.empty_like(x)
            for i in range(iters):
                with torch.cuda.stream(stream):
                    out.fill_(float("nan"))
                    rc = enqueue(plugin, HALF, [x, skip], out, stream.cuda_stream)
                assert rc == 0, f"{label}: enqueue {i} returned {rc}"
                if i % 50 == 0 or i == iters - 1:
                    stream.synchronize()
                    assert torch.equal(out, want), f"{label}: enqueue {i} differs from the bare kernel"
            stream.synchronize()
    except BaseException as e:  # noqa: BLE001 - reported by the main thread
        failures.append(e)


def test_clone_per_device_concurrent_then_device0_destroyed(h, torch, two):
    p, w = skip_norm(h, HIDDEN, seed=21)
    with torch.cuda.device(0):
        ready(p, HALF, HIDDEN, 2)
    with torch.cuda.device(1):  # TensorRT clones per device and configures with that device current
        c = ready(p.clone(), HALF, HIDDEN, 2)
    data = {d: inputs(torch, f"cuda:{d}", 30 + d) for d in two}
    want = {d: bare_skip_norm(torch, *data[d], w) for d in two}
    for d in two:
        check_reference(torch, want[d], *data[d], w)
    failures = []
    pool = [threading.Thread(target=run, args=(torch, pl, d, *data[d], want[d], ITERS, failures, f"GPU {d}"))
            for pl, d in ((p, 0), (c, 1))]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not failures, failures[0]
    del p  # the GPU-0 instance goes first; the GPU-1 clone owns its weights and keeps running
    torch.cuda.synchronize(0)
    run(torch, c, 1, *data[1], want[1], ITERS, failures, "GPU 1 after GPU 0's plugin was destroyed")
    assert not failures, failures[0]
    print(f"trt{h.major}-v{h.api}: {3 * ITERS} enqueues on 2 GPUs, checked")


def test_cuda_graph_capture_on_each_device(h, torch, two):
    p, w = skip_norm(h, HIDDEN, seed=22)
    with torch.cuda.device(0):
        ready(p, HALF, HIDDEN, 2)
    with torch.cuda.device(1):
        c = ready(p.clone(), HALF, HIDDEN, 2)
    for plugin, d in ((p, 0), (c, 1)):
        with torch.cuda.device(d):
            x, skip = inputs(torch, f"cuda:{d}", 40 + d)
            out = torch.full_like(x, float("nan"))
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                rc = enqueue(plugin, HALF, [x, skip], out, torch.cuda.current_stream(d).cuda_stream)
            assert rc == 0
            graph.replay()
            torch.cuda.synchronize(d)
            assert torch.equal(out, bare_skip_norm(torch, x, skip, w))
            check_reference(torch, out, x, skip, w)
