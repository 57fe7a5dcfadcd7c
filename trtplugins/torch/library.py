"""torch.library custom ops `trtplugins::<op>`, one per fused op, registered from the op spec
(trtplugins.ops: schema.json): the plugin's inputs are the op's tensor arguments, its fields
keyword-only arguments (weights as tensors, strings, ints, floats, with the declared defaults);
each op is named after its op module (trtplugins/ops/skip_norm.py: trtplugins::skip_norm).
Ops with an optional second output (`output_sum`) return a list of tensors.

Kernels: CUDA (the project's kernels through _kernels, on the current stream), CPU (cpu.py),
fake (shapes only: torch.compile, torch.export); no autograd (inference only: the Autograd keys fall
through, and a call that needs a gradient raises, naming the op). CUDA calls reuse a launch prepared
per call signature (_kernels.eager); eager calls from trtplugins.torch.<op> skip the dispatcher.
Every implementation checks the arguments the same way."""

from __future__ import annotations

import functools

import torch

from .. import ops
from ..ops.group_norm import skip_fits as group_norm_skip_fits
from ..ops.skip_norm import skip_fits as skip_norm_skip_fits
from ..ops import registry
from . import cpu

NAMESPACE = ops.DOMAIN  # trtplugins::<op>
#: the ops with no torch op, and why (tests/test_completeness.py: every other op has one)
NOT_IN_TORCH = {ops.LEGACY_GELU: "TensorRT OSS's plugin name for a GELU: torch code calls bias_activation"}
PLUGINS = tuple(p for p in ops.OPS if p not in NOT_IN_TORCH)
_TYPES = {"string": "str", "float": "float", "int": "int", "weights": "Tensor"}


def op_name(plugin: str) -> str:
    """The name of its op module: SkipNorm -> skip_norm."""
    return registry.module(plugin).__name__.rpartition(".")[2]


def _multi(spec: ops.OpSpec) -> bool:
    return any(t.when for t in spec.outputs)


def schema(spec: ops.OpSpec) -> str:
    """The torch schema of a plugin, e.g. (Tensor x, Tensor? skip=None, *, str norm, ...) -> Tensor[]."""
    args = [f"Tensor? {t.name}=None" if t.optional else f"Tensor {t.name}" for t in spec.inputs] + ["*"]
    for f in spec.fields:
        typ = _TYPES[f.kind]
        if f.required:
            args.append(f"{typ} {f.name}")
        elif f.kind == "weights":
            args.append(f"{typ}? {f.name}=None")
        else:
            args.append(f'{typ} {f.name}="{f.default}"' if f.kind == "string" else f"{typ} {f.name}={f.default!r}")
    return f"({', '.join(args)}) -> {'Tensor[]' if _multi(spec) else 'Tensor'}"


def bind(spec: ops.OpSpec, args: tuple, kwargs: dict) -> dict:
    """Every argument by name, defaults filled in."""
    names = [t.name for t in spec.inputs]
    out = dict(zip(names, args))
    for t in spec.inputs:
        out.setdefault(t.name, kwargs.get(t.name))
    for f in spec.fields:
        out[f.name] = kwargs.get(f.name, f.default)
    return out


def check(spec: ops.OpSpec, a: dict) -> list[tuple]:
    """Check the arguments as the kernels and plugins do; return the output shapes."""
    name = f"{NAMESPACE}::{op_name(spec.name)}"
    x = a[spec.inputs[0].name]
    if str(x.dtype).removeprefix("torch.") not in spec.types:
        raise TypeError(f"{name}: x is {x.dtype}; the op takes {', '.join(spec.types)}")
    for t in spec.inputs[1:]:
        v = a[t.name]
        if v is not None and (v.dtype != x.dtype or v.device != x.device):
            raise TypeError(f"{name}: {t.name} is {v.dtype} on {v.device}; x is {x.dtype} on {x.device}")
    for f in spec.fields:
        v = a[f.name]
        if f.choices and v not in f.choices:
            raise ValueError(f"{name}: {f.name} {v!r} is not one of {', '.join(f.choices)}")
        if f.kind == "weights" and v is not None and not v.is_floating_point():
            raise TypeError(f"{name}: {f.name} is {v.dtype}; weights are floating point")
    if "output_sum" in a and a["output_sum"] not in (0, 1):
        raise ValueError(f"{name}: output_sum is {a['output_sum']}; 0 or 1")
    shape = tuple(x.shape)
    if spec.name == ops.SKIP_NORM:
        width = shape[-1] if shape else 0
        skip = a["skip"]
        if skip is not None and not skip_norm_skip_fits(shape, skip.shape):
            raise ValueError(f"{name}: skip {tuple(skip.shape)} is neither x's {shape} nor broadcast over "
                             "its leading dims")
    elif spec.name == ops.GROUP_NORM:
        if len(shape) < 3:
            raise ValueError(f"{name}: x {shape} must be N, C, spatial... (rank >= 3)")
        width, groups, skip = shape[1], a["num_groups"], a["skip"]
        if groups < 1 or width % groups:
            raise ValueError(f"{name}: num_groups {groups} does not divide the {width} channels")
        if skip is not None and not group_norm_skip_fits(shape, skip.shape):
            raise ValueError(f"{name}: skip {tuple(skip.shape)} is neither x's {shape} nor [N, C, 1, ...]")
    elif spec.name == ops.GATED_ACTIVATION:
        if a["x2"] is not None:
            if tuple(a["x2"].shape) != shape:
                raise ValueError(f"{name}: x2 {tuple(a['x2'].shape)} is not x's {shape}")
            width = shape[-1]
        else:
            if not shape or shape[-1] % 2:
                raise ValueError(f"{name}: x {shape} has no two halves in its last dim")
            width = shape[-1] // 2
            shape = shape[:-1] + (width,)
    else:
        width = shape[-1] if shape else 1
    for f in spec.fields:
        v = a[f.name]
        if f.kind == "weights" and v is not None and v.numel() != width:
            raise ValueError(f"{name}: {f.name} has {v.numel()} values; expected {width}")
    return [shape] * spec.num_outputs(a)


def _register(lib: torch.library.Library, spec: ops.OpSpec) -> None:
    name = op_name(spec.name)
    qualname = f"{NAMESPACE}::{name}"
    lib.define(name + schema(spec))
    multi = _multi(spec)

    def kernel(fn):
        def run(*args, **kwargs):
            _no_grad(qualname, args, kwargs)
            a = bind(spec, args, kwargs)
            check(spec, a)
            pos = [a.pop(t.name) for t in spec.inputs]
            return fn(*pos, **a)
        return run

    def cpu_(*args, **kwargs):
        return getattr(cpu, name)(*args, **kwargs)

    def cuda(*args, **kwargs):
        return getattr(_cuda_kernels(), name)(*args, **kwargs)

    def cuda_prepared(*args, **kwargs):
        _no_grad(qualname, args, kwargs)
        return _cuda_kernels().eager(name, args, kwargs, checked_cuda)

    def fake(*args, **kwargs):
        _no_grad(qualname, args, kwargs)
        a = bind(spec, args, kwargs)
        x = a[spec.inputs[0].name]
        out = [x.new_empty(s) for s in check(spec, a)]
        return out if multi else out[0]

    checked_cuda = _CUDA[name] = kernel(cuda)
    lib.impl(name, kernel(cpu_), "CPU")
    lib.impl(name, cuda_prepared, "CUDA")
    # No autograd layer of its own (a Python one would cost each call as much as the launch): the
    # Autograd keys fall through to the kernels above, which refuse a call that needs a gradient.
    lib.impl(name, torch.library.fallthrough_kernel, "Autograd")
    torch.library.register_fake(qualname, fake, lib=lib)


@functools.cache
def _cuda_kernels():
    """trtplugins.torch._kernels, imported on the first CUDA call (it loads the kernel library); the C++
    launches built then where TRTPLUGINS_TORCH_CPP=1 (_cpp.py)."""
    from . import _cpp, _kernels

    _cpp.from_env()
    return _kernels


def _needs_grad(args: tuple, kwargs: dict) -> bool:
    return torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad
                                           for t in (*args, *kwargs.values()))


def _no_grad(qualname: str, args: tuple, kwargs: dict) -> None:
    if _needs_grad(args, kwargs):
        raise RuntimeError(f"{qualname} has no backward (inference only): call it under torch.no_grad() "
                           "or torch.inference_mode()")


_CUDA = {}  # op name -> its CUDA implementation, every argument checked
_LIB = torch.library.Library(NAMESPACE, "DEF")
for _plugin in PLUGINS:
    _register(_LIB, ops.spec(_plugin))


def _direct(args: tuple, kwargs: dict) -> bool:
    """Whether an eager call may go straight to the CUDA implementation, past the dispatcher (whose
    Python layers cost more host time than the launch): plain CUDA tensors, nothing tracing,
    compiling or exporting, no gradient asked for (the op's own error then)."""
    x = args[0] if args else None
    if type(x) is not torch.Tensor or not x.is_cuda or torch.jit.is_tracing() or torch.compiler.is_compiling():
        return False
    return not _needs_grad(args, kwargs)


def _caller(plugin: str):
    spec = ops.spec(plugin)
    name = op_name(plugin)
    op = getattr(getattr(torch.ops, NAMESPACE), name)
    multi = _multi(spec)

    def call(*args, **kwargs):
        if _direct(args, kwargs):
            out = _cuda_kernels().eager(name, args, kwargs, _CUDA[name])
        else:
            out = op(*args, **kwargs)
        return (out[0] if len(out) == 1 else tuple(out)) if multi else out

    call.__name__ = call.__qualname__ = op_name(plugin)
    call.__doc__ = f"{spec.doc}\n\ntorch.ops.{NAMESPACE}.{op_name(plugin)}{schema(spec)}" + (
        "\nReturns y, or (y, sum) with output_sum=1." if multi else "")
    return call


skip_norm = _caller(ops.SKIP_NORM)
group_norm = _caller(ops.GROUP_NORM)
bias_activation = _caller(ops.BIAS_ACTIVATION)
gated_activation = _caller(ops.GATED_ACTIVATION)
