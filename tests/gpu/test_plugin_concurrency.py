"""The plugin adapters under the conditions TensorRT runs them in production (issue 11),
driven through the C ABI harness of each TensorRT major:

- concurrency: 8 threads x 8 streams, each thread with its own clones, >= 10,000 enqueues,
  every output checked bit for bit against the bare kernel (outputs poisoned before each);
- CUDA-graph capture: enqueue captured and replayed gives the eager output; a plugin without
  device weights refuses inside a capture without breaking it (no allocation, no sync copy);
- weights: every clone owns its own, uploaded once (also under concurrent initialize),
  freed on destroy; per device (two GPUs) or per CUDA context (two contexts on one GPU).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from plugin_harness import FLOAT, HALF  # noqa: E402

from trtplugins.ops import bias_activation, skip_norm as skip_norm_op  # noqa: E402

MB = 1 << 20


def weights(hidden, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(hidden).astype(np.float32) for _ in range(3)]


def skip_norm(h, hidden, seed=0):
    gamma, beta, bias = weights(hidden, seed)
    p = h.create_from("SkipNorm", norm="layer", gamma=gamma, beta=beta, bias=bias, epsilon=1e-5)
    return p, (gamma, beta, bias)


def ready(p, dtype_id, hidden, nb_in):
    """Build-time configure (V3: uploads the weights), then V2 initialize (V3: no-op)."""
    assert p.configure([dtype_id] * (nb_in + 1), [(-1, hidden)] * (nb_in + 1), nb_in) == 0
    assert p.initialize() == 0
    return p


def enqueue(p, dtype_id, inputs, out, stream):
    shape = tuple(inputs[0].shape)
    n = len(inputs) + 1
    return p.enqueue([dtype_id] * n, [shape] * n, [t.data_ptr() for t in inputs], [out.data_ptr()], stream)


def bare_skip_norm(torch, x, skip, w):
    gamma, beta, bias = (torch.from_numpy(a).to(x.device) for a in w)
    return skip_norm_op.kernel(x, skip, gamma=gamma, beta=beta, bias=bias, norm="layer", epsilon=1e-5)


def test_this_gpu_is_supported(h, torch):
    assert h.gpu_problem() == "", h.gpu_problem()
    name = torch.cuda.get_device_name()
    cc = torch.cuda.get_device_capability()
    assert "no kernel image" in h.gpu_problem(name, cc, has_image=False)


def test_8_threads_8_streams_cloned_plugins(h, torch):
    threads, per_thread, ring, hidden, rows = 8, 1280, 8, 768, 64
    sn, w = skip_norm(h, hidden, seed=1)
    ready(sn, HALF, hidden, 2)
    bias = np.random.default_rng(2).standard_normal(hidden).astype(np.float32)
    ba = ready(h.create_from("BiasActivation", activation="gelu", bias=bias), HALF, hidden, 1)
    g = torch.Generator().manual_seed(3)
    xs = [torch.randn(rows, hidden, generator=g).half().cuda() for _ in range(threads)]
    skips = [torch.randn(rows, hidden, generator=g).half().cuda() for _ in range(threads)]
    want_sn = [bare_skip_norm(torch, x, s, w) for x, s in zip(xs, skips)]
    want_ba = [bias_activation.kernel(x, torch.from_numpy(bias).cuda(), "gelu") for x in xs]
    torch.cuda.synchronize()
    clones = [(sn.attach(), ba.attach()) for _ in range(threads)]  # per context, as TensorRT makes them (V3 attachToContext)
    launches, failures = [0] * threads, []

    def work(t):
        try:
            stream = torch.cuda.Stream()
            outs = [torch.empty_like(xs[t]) for _ in range(ring)]
            for start in range(0, per_thread, ring):
                kinds = []
                with torch.cuda.stream(stream):
                    for i in range(ring):
                        outs[i].fill_(float("nan"))
                        use_sn = (start + i + t) % 2 == 0
                        p = clones[t][0] if use_sn else clones[t][1]
                        inputs = [xs[t], skips[t]] if use_sn else [xs[t]]
                        rc = enqueue(p, HALF, inputs, outs[i], stream.cuda_stream)
                        assert rc == 0, f"thread {t} enqueue {start + i} returned {rc}"
                        kinds.append(use_sn)
                stream.synchronize()
                for out, use_sn in zip(outs, kinds):
                    want = want_sn[t] if use_sn else want_ba[t]
                    assert torch.equal(out, want), f"thread {t}: output differs from the bare kernel"
                    launches[t] += 1
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            failures.append(e)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    assert not failures, failures[0]
    assert sum(launches) >= 10_000
    print(f"trt{h.major}: {sum(launches)} concurrent enqueues on {threads} streams, every output checked")


def test_cuda_graph_capture_replays_the_same(h, torch):
    hidden, rows = 1024, 33
    p, w = skip_norm(h, hidden, seed=4)
    ready(p, FLOAT, hidden, 2)
    g = torch.Generator().manual_seed(5)
    x, skip = torch.randn(rows, hidden, generator=g).cuda(), torch.randn(rows, hidden, generator=g).cuda()
    x2 = torch.randn(rows, hidden, generator=g).cuda()
    out = torch.full_like(x, float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # global capture mode: an allocation or a sync copy would break it
        rc = enqueue(p, FLOAT, [x, skip], out, torch.cuda.current_stream().cuda_stream)
    assert rc == 0
    for inp in (x.clone(), x2):
        x.copy_(inp)
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, bare_skip_norm(torch, x, skip, w))
    # Without weights on the device, enqueue refuses (it never uploads): the capture stays valid.
    q, _ = skip_norm(h, hidden, seed=4)  # never configured or initialized: no weights
    empty = torch.cuda.CUDAGraph()
    with torch.cuda.graph(empty):
        rc = enqueue(q, FLOAT, [x, skip], out, torch.cuda.current_stream().cuda_stream)
        out.add_(0)  # keeps the graph non-empty
    assert rc != 0
    empty.replay()
    torch.cuda.synchronize()


def free_bytes(torch, device=None):
    torch.cuda.synchronize(device)
    return torch.cuda.mem_get_info(device)[0]


def test_clones_own_their_weights_and_initialize_uploads_once(h, torch):
    hidden = 1 << 20  # 3 x 4 MiB of weights: visible in cudaMemGetInfo
    size = 3 * 4 * hidden
    p, w = skip_norm(h, hidden, seed=6)
    x = torch.randn(2, hidden).cuda()
    out = torch.full_like(x, float("nan"))
    want = bare_skip_norm(torch, x, None, w)  # torch's own allocations happen before the measurements
    if h.api == 2:
        p.configure([FLOAT] * 2, [(-1, hidden)] * 2, 1)
    before = free_bytes(torch)
    if h.api == 2:  # initialize is thread-safe: 8 threads at once upload once
        rcs = []
        pool = [threading.Thread(target=lambda: rcs.append(p.initialize())) for _ in range(8)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
        assert rcs == [0] * 8
    else:  # V3 has no initialize: configurePlugin uploads (on a GPU)
        assert p.configure([FLOAT] * 2, [(-1, hidden)] * 2, 1) == 0
    once = before - free_bytes(torch)
    assert size <= once < 2 * size, f"8 concurrent initialize() took {once / MB:.1f} MiB for {size / MB:.0f} MiB of weights"
    clone = p.clone()
    assert before - free_bytes(torch) >= once + size, "a clone must own its weights"
    del p  # the source's weights go; the clone computes with its own
    assert before - free_bytes(torch) < once + size
    assert enqueue(clone, FLOAT, [x], out, torch.cuda.current_stream().cuda_stream) == 0
    assert torch.equal(out, want)
    del clone
    assert before - free_bytes(torch) < size


def test_weights_per_device_or_context(h, torch):
    """Two GPUs: a clone made on device 1 owns weights there, freed there. One GPU: the same
    with two CUDA contexts on it (cuda-python's driver API), which is what ran is printed."""
    hidden, rows = 1 << 20, 4
    size = 3 * 4 * hidden
    if torch.cuda.device_count() >= 2:
        p, w = skip_norm(h, hidden, seed=7)
        with torch.cuda.device(0):
            ready(p, FLOAT, hidden, 1)
        free0 = free_bytes(torch, 0)
        with torch.cuda.device(1):
            free1 = free_bytes(torch, 1)
            c = p.clone()
            assert free1 - free_bytes(torch, 1) >= size and abs(free0 - free_bytes(torch, 0)) < size
            x = torch.randn(rows, hidden, device="cuda:1")
            out = torch.full_like(x, float("nan"))
            stream = torch.cuda.current_stream(1).cuda_stream
            assert enqueue(c, FLOAT, [x], out, stream) == 0
            assert torch.equal(out, bare_skip_norm(torch, x, None, w))
            assert enqueue(p, FLOAT, [x], out, stream) != 0  # device-0 weights never used on device 1
        mid = free_bytes(torch, 1)
        with torch.cuda.device(0):
            del c  # freed on device 1 while device 0 is current
        assert free_bytes(torch, 1) - mid >= size
        print(f"trt{h.major}: per-device weights on 2 GPUs")
        return
    driver = pytest.importorskip("cuda.bindings.driver", reason="two contexts on one GPU need cuda-python")
    two_contexts_on_one_gpu(h, torch, driver, hidden, rows, size)
    print(f"trt{h.major}: one GPU: per-context weights with two CUDA contexts on device 0")


def _ok(result):
    err, *rest = result if isinstance(result, tuple) else (result,)
    assert int(err) == 0, f"CUDA driver error {err}"
    return rest[0] if len(rest) == 1 else rest


def two_contexts_on_one_gpu(h, torch, cu, hidden, rows, size):
    p, w = skip_norm(h, hidden, seed=8)
    ready(p, FLOAT, hidden, 1)  # in torch's (primary) context
    x = torch.randn(rows, hidden)
    want = bare_skip_norm(torch, x.cuda(), None, w).cpu()
    dev = _ok(cu.cuDeviceGet(0))
    try:
        ctx = _ok(cu.cuCtxCreate(None, 0, dev))  # cuda-python 13: (params, flags, device)
    except TypeError:
        ctx = _ok(cu.cuCtxCreate(0, dev))  # cuda-python 12: (flags, device)
    _ok(cu.cuCtxPopCurrent())  # cuCtxCreate made it current: back to torch's context
    try:
        _ok(cu.cuCtxPushCurrent(ctx))
        free = _ok(cu.cuMemGetInfo())[0]
        c = p.attach()  # V3 attachToContext / V2 clone: uploads in the other context
        assert free - _ok(cu.cuMemGetInfo())[0] >= size
        nbytes = x.numel() * 4
        dx, dy = _ok(cu.cuMemAlloc(nbytes)), _ok(cu.cuMemAlloc(nbytes))
        stream = _ok(cu.cuStreamCreate(0))
        _ok(cu.cuMemcpyHtoD(dx, x.numpy().ctypes.data, nbytes))
        shape = tuple(x.shape)
        assert c.enqueue([FLOAT] * 2, [shape] * 2, [int(dx)], [int(dy)], int(stream)) == 0
        assert p.enqueue([FLOAT] * 2, [shape] * 2, [int(dx)], [int(dy)], int(stream)) != 0  # other context's weights
        _ok(cu.cuStreamSynchronize(stream))
        got = np.empty(x.shape, np.float32)
        _ok(cu.cuMemcpyDtoH(got.ctypes.data, dy, nbytes))
        assert np.array_equal(got, want.numpy())
        for ptr in (dx, dy):
            _ok(cu.cuMemFree(ptr))
        _ok(cu.cuStreamDestroy(stream))
        _ok(cu.cuCtxPopCurrent())
        before = free_bytes(torch)
        del c  # destroyed while torch's context is current: freed in its own context
        assert free_bytes(torch) - before >= size
    finally:
        _ok(cu.cuCtxDestroy(ctx))
