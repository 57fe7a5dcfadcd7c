"""Which part of fuse() costs the SD 1.5 UNet's eager forward its host time (issue 33: eager + fuse ran
0.92x eager in run 6, host-bound, while our GroupNorm + SiLU cost the host less than torch's two ops in a
loop). Host ms per forward (FP16, batch 1, inference mode) of the unfused model and of fused copies where
some fused modules run torch's own ops instead of ours (the modules, rewritten forwards and folds stay):

  eager          the unfused model
  modules        fuse(), every fused module running torch's ops: the cost of the modules and rewrites alone
  ours           fuse(), our kernels everywhere
  ours GN        fuse(), our kernels in the GroupNorms only (LayerNorms and gated units: torch's ops)
  ours LN        fuse(), our kernels in the LayerNorms only
  ours gated     fuse(), our kernels in the gated units and products only
  norms only     fuse(silu=False, skip=False, gated=False): our kernels, nothing folded
  ... (gc off)   eager and ours again with Python's garbage collector off (our calls allocate a few
                 containers each: a collection's share of the host time)
  ... C++        (--cpp) ours and ours LN again through the C++ launches (trtplugins.torch.use_cpp(): no
                 Python of ours past the modules' forward)

The models alternate (bench_models.rounds), 10 forwards each per round (the host's speed drifts); medians.
--tiny: the tiny UNet on the CPU (a smoke run of this script)."""

import copy
import functools
import gc
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_models as bm  # noqa: E402

import trtplugins.torch as tt  # noqa: E402
from trtplugins.torch import _cpp, modules  # noqa: E402

compiled = modules._compiled
modules._compiled = lambda m: getattr(m, "torch_ops", False) or compiled(m)  # a module told to run torch's ops
KINDS = {"GN": (tt.FusedGroupNorm,), "LN": (tt.FusedLayerNorm,), "gated": (tt.FusedGatedLinear, tt.FusedActivation)}
FUSED = tuple(c for v in KINDS.values() for c in v)


def variant(model, ours: tuple = tuple(KINDS), **flags):
    """A fused copy of model whose fused modules outside the kinds `ours` run torch's ops."""
    m = copy.deepcopy(model)
    tt.fuse(m, **flags)
    keep = tuple(c for k in ours for c in KINDS[k])
    for sub in m.modules():
        if isinstance(sub, FUSED) and not isinstance(sub, keep):
            sub.torch_ops = True
    return m


tiny = "--tiny" in sys.argv
bm.DEVICE = "cpu" if tiny else "cuda"
model = bm.build_unet(torch.float32 if tiny else torch.float16, tiny)  # made outside inference mode, as a loaded model's
inputs = bm.unet_inputs(model, 1, torch.Generator(device=bm.DEVICE).manual_seed(0))
models = {"eager": model, "modules": variant(model, ()), "ours": variant(model), "ours GN": variant(model, ("GN",)),
          "ours LN": variant(model, ("LN",)), "ours gated": variant(model, ("gated",)),
          "norms only": variant(model, ("GN", "LN"), silu=False, skip=False, gated=False)}
cpp = tt.use_cpp() if "--cpp" in sys.argv else None
_cpp.ext = None  # set for the C++ variants' calls only
if cpp is not None:
    models.update({"ours C++": models["ours"], "ours LN C++": models["ours LN"]})


def host_ms(m, ext=None, gc_off=False):
    _cpp.ext = ext
    if gc_off:
        gc.disable()
    try:
        return bm.time_ms(m, inputs, 2, 10)[1]
    finally:
        _cpp.ext = None
        gc.enable()


with torch.inference_mode():
    want = model(*inputs).sample.float()
    for name, m in models.items():
        _cpp.ext = cpp if name.endswith("C++") else None
        err = ((m(*inputs).sample.float() - want).abs().max() / want.abs().max()).item()
        print(f"{name:11s} max rel err vs eager {err:.2e}")
    calls = {name: functools.partial(host_ms, m, cpp if name.endswith("C++") else None) for name, m in models.items()}
    for name in ("eager", "ours"):
        calls[f"{name} (gc off)"] = functools.partial(host_ms, models[name], gc_off=True)
    times = bm.rounds(calls, 8)
base = statistics.median(times["eager"])
device = "CPU" if tiny else torch.cuda.get_device_name()
print(f"host ms per forward (median of 10 per round), median of 8 alternated rounds ({device}, torch {torch.__version__})")
for name, t in times.items():
    med = statistics.median(t)
    print(f"  {name:14s} {med:7.2f} ms  {base / med:.3f}x eager   rounds {[round(v, 1) for v in t]}")
