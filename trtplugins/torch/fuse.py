"""fuse(model): replace a model's norms by the fused modules, in place, and report what was
replaced and what was left with why.

- nn.LayerNorm over the last dim -> FusedLayerNorm; nn.GroupNorm -> FusedGroupNorm; nn.RMSNorm
  and RMSNorm modules of model code (HF LLaMA/Mistral/Qwen2/T5 style) -> FusedRMSNorm. The latter
  are recognized by behaviour: a leaf module with one 1-D `weight`, a float epsilon attribute,
  whose output on a probe input equals x / sqrt(mean(x^2) + eps) * weight.
- A SiLU after a GroupNorm is folded into the GroupNorm where the parent's forward shows it is
  exact: `h = self.<norm>(...)` directly followed by `h = self.<silu>(h)`, with self.<silu> an
  nn.SiLU, so the norm's output is read by the SiLU alone. Such a statement after an if/elif/else
  whose branches end in a norm call is first moved into every branch (the same statements run on
  every path): diffusers' ResnetBlock2D norm2. The parent's forward is recompiled from its source
  with those call sites changed to `self.<norm>(..., activation="silu")` and the SiLU statements
  removed, and set on that instance only; the SiLU module stays (it may serve other calls, as the
  ResNet block's time embedding). Modules, not call sites, are shared, so nothing else changes.
- An add before a norm is folded into its skip input the same way: `h = x + t` (`h = h + t` also
  alone under `if t is not None:`) directly followed by `h = self.<norm>(h)` becomes
  `h = self.<norm>(x, skip=t)` (diffusers' ResnetBlock2D: the time embedding added before norm2), as does
  `self.<norm>(x + t)` (BERT's post-norm); a residual stream's `h = x + t; r = h; n = self.<norm>(h)` (HF
  LLaMA/Mistral/Qwen2/Gemma layers) becomes `n, r = self.<norm>(x, skip=t, output_sum=True)`, one kernel that
  also writes the sum. A skip the op cannot take (another dtype, a shape it does not broadcast) is added
  first at run time.
- A gated unit -> FusedGatedLinear: a module named *GLU* (diffusers' GEGLU, SwiGLU) holding one nn.Linear
  and parameterless activations, whose output on a probe input is a * act(g) of the projection's two
  halves (the activation and which half it gates found by the probe).
- An activation times a tensor, `self.<act>(a) * b` in a forward (HF LLaMA/Mistral/Qwen2 MLPs), with
  self.<act> a parameterless module computing SiLU, GELU (either form) or ReLU on a probe: rewritten into
  `self.<act>(a, gated=b)`, self.<act> wrapped in FusedActivation (one kernel for both; its plain calls
  unchanged).
"""

from __future__ import annotations

import ast
import copy
import inspect
import textwrap
import types
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import torch
from torch import nn

from ..ops import GATED_ACTIVATIONS
from .cpu import ACTIVATIONS
from .modules import (IO_DTYPES, UNDER_COMPILE, FusedActivation, FusedGatedLinear, FusedGroupNorm, FusedLayerNorm,
                      FusedRMSNorm)

EPS_ATTRS = ("variance_epsilon", "eps", "epsilon")
_NORMS = (FusedLayerNorm, FusedRMSNorm, FusedGroupNorm)  # the modules that take a skip (and give the sum)
_FUSED = _NORMS + (FusedGatedLinear, FusedActivation)
_RMS = getattr(nn, "RMSNorm", None)


@dataclass
class FuseReport:
    replaced: list[dict] = field(default_factory=list)  # module, from, to (+ silu, skip: call sites folded)
    left: list[dict] = field(default_factory=list)  # module, type, reason

    def counts(self) -> dict[str, int]:
        return dict(Counter(f"{r['from']} -> {r['to']}" for r in self.replaced))

    def silu_folded(self) -> int:
        return sum(len(r.get("silu", ())) for r in self.replaced)

    def skip_folded(self) -> int:
        return sum(len(r.get("skip", ())) for r in self.replaced)

    def products_folded(self) -> int:
        return sum(len(r.get("gated", ())) for r in self.replaced)

    def __str__(self) -> str:
        lines = [f"replaced {n:>4} x {k}" for k, n in self.counts().items()] or ["replaced nothing"]
        if self.silu_folded():
            lines.append(f"folded   {self.silu_folded():>4} x SiLU into GroupNorm")
        if self.skip_folded():
            lines.append(f"folded   {self.skip_folded():>4} x an add into the norm after it (its skip input)")
        if self.products_folded():
            lines.append(f"folded   {self.products_folded():>4} x a product into the activation before it")
        lines += [f"left {r['module']} ({r['type']}): {r['reason']}" for r in self.left]
        return "\n".join(lines)


def fuse(model: nn.Module, silu: bool = True, under_compile: str = "torch", skip: bool = True,
         gated: bool = True) -> FuseReport:
    """Replace model's LayerNorm, GroupNorm (+ SiLU where exact, + an add before it as its skip),
    RMSNorm and (gated) gated-unit modules by the fused ones, in place (their parameters shared, the
    state_dict unchanged). Returns the report.
    under_compile: what the fused modules run when torch.compile traces them, "torch" (its own ops,
    which Inductor fuses with their neighbours) or "trtplugins" (our op); see modules.py."""
    if under_compile not in UNDER_COMPILE:
        raise ValueError(f"under_compile must be one of {', '.join(UNDER_COMPILE)}; got {under_compile!r}")
    report = FuseReport()
    uses: dict[int, list] = defaultdict(list)  # id(module) -> [(parent, attribute)]
    for parent in model.modules():
        for attr, child in parent.named_children():
            uses[id(child)].append((parent, attr))
    folds: dict[int, list] = {}  # id(parent) -> [parent, {norm attributes}, prefix, {attribute: activation}]
    for name, m in list(model.named_modules()):
        if not name or isinstance(m, _FUSED):
            continue
        new, why = _replacement(m, gated)
        if new is None:
            if why:
                report.left.append({"module": name, "type": type(m).__name__, "reason": why})
            continue
        new.under_compile = under_compile
        for parent, attr in uses[id(m)]:
            setattr(parent, attr, new)
            if isinstance(new, _NORMS):
                prefix = name.rsplit(".", 1)[0] + "." if "." in name else ""
                folds.setdefault(id(parent), [parent, set(), prefix, {}])[1].add(attr)
        entry = {"module": name, "from": type(m).__name__, "to": type(new).__name__}
        if isinstance(new, FusedGatedLinear):
            entry.update(activation=new.activation, gate=new.gate)
        report.replaced.append(entry)
    if gated:
        products: dict = {}  # a forward -> the attributes it calls as `self.<a>(x) * y`
        for name, parent in list(model.named_modules()):
            acts = _gating_activations(parent, products)
            if acts:
                folds.setdefault(id(parent), [parent, set(), name + "." if name else "", {}])[3].update(acts)
    by_name = {r["module"]: r for r in report.replaced}
    for parent, attrs, prefix, acts in folds.values():
        gns = {a for a in attrs if isinstance(getattr(parent, a, None), FusedGroupNorm)}
        silus = {a for a, c in parent.named_children() if type(c) is nn.SiLU} if silu and gns else set()
        if not silus and not (skip and attrs) and not acts:
            continue
        sites, skips, gated_sites, why = _fold_calls(parent, attrs if skip else gns, silus, skip, acts, gns)
        for attr in sorted(attrs):
            entry = by_name.get(prefix + attr)
            if entry is not None and skips.get(attr):
                entry["skip"] = skips[attr]
            if not silus or attr not in gns:
                continue
            if entry is not None and sites.get(attr):
                entry["silu"] = sites[attr]
            elif entry is not None:
                report.left.append({"module": prefix + attr, "type": "SiLU after GroupNorm", "reason": why or (
                    f"no `h = self.{attr}(...)` directly followed by `h = self.<SiLU>(h)` in "
                    f"{type(parent).__name__}.forward")})
        for attr, where in sorted(gated_sites.items()):
            act = getattr(parent, attr)
            new = FusedActivation(act, acts[attr])
            new.under_compile = under_compile
            setattr(parent, attr, new)
            report.replaced.append({"module": prefix + attr, "from": type(act).__name__, "to": "FusedActivation",
                                    "activation": acts[attr], "gated": where})
    return report


def _replacement(m: nn.Module, gated: bool = True) -> tuple[nn.Module | None, str | None]:
    """The fused module for m, or (None, why it is left; None: nothing to fuse at all)."""
    kind = type(m).__name__
    if gated and "glu" in kind.lower():
        return _gated(m)
    for base, fused in ((nn.LayerNorm, FusedLayerNorm), (nn.GroupNorm, FusedGroupNorm), (_RMS, FusedRMSNorm)):
        if base is None or not isinstance(m, base):
            continue
        if type(m).forward is not base.forward:
            return None, f"{kind} overrides {base.__name__}.forward"
        if base is not nn.GroupNorm and len(m.normalized_shape) != 1:
            return None, f"normalizes over the last {len(m.normalized_shape)} dims; the fused op over the last one"
        return fused.from_module(m), None
    if next(m.children(), None) is not None:
        return None, None
    params = dict(m.named_parameters(recurse=False))
    eps = next((getattr(m, a) for a in EPS_ATTRS if isinstance(getattr(m, a, None), float)), None)
    weight = params.get("weight")
    if "norm" not in kind.lower() and not (eps is not None and weight is not None and weight.dim() == 1):
        return None, None
    if set(params) != {"weight"} or weight.dim() != 1:
        return None, f"no fused op for it (parameters: {', '.join(params) or 'none'}; an RMSNorm has one 1-D weight)"
    if eps is None:
        return None, f"no float epsilon attribute ({', '.join(EPS_ATTRS)})"
    why = _probe_rms(m, weight, eps)
    return (None, why) if why else (FusedRMSNorm.from_module(m, eps), None)


def _probe(m: nn.Module, x: torch.Tensor, weight: torch.Tensor) -> tuple[torch.Tensor | None, str | None]:
    """(m(x), None) with x in weight's dtype on its device, no gradient; (None, why) where m cannot be
    probed (a meta or non-float weight) or refuses the probe."""
    if weight.device.type == "meta" or weight.dtype not in IO_DTYPES:
        return None, f"cannot probe a {weight.dtype} weight on {weight.device}"
    try:
        with torch.no_grad():
            return m(x.to(weight.device, weight.dtype)), None
    except Exception as e:  # a module that is not what it looks like may refuse the probe in any way
        return None, f"probe failed: {type(e).__name__}: {e}".split("\n")[0]


def _probe_tol(dtype: torch.dtype) -> float:
    """A probe's relative bound on a module's output in dtype."""
    return 1e-4 if dtype == torch.float32 else 2e-2


def _probe_rms(m: nn.Module, weight: torch.Tensor, eps: float) -> str | None:
    """None when m computes x / sqrt(mean(x^2) + eps) * weight on a probe input (rows of scale
    1e-3, where eps matters, 1 and 30, off zero mean, so a LayerNorm fails), else why not."""
    gen = torch.Generator().manual_seed(0)
    size = weight.shape[0]
    x = torch.randn(3, size, generator=gen, dtype=torch.float64) + 0.5
    x = (x * torch.tensor([[1e-3], [1.0], [30.0]], dtype=torch.float64)).to(weight.dtype)
    out, why = _probe(m, x, weight)
    if why:
        return why
    if not isinstance(out, torch.Tensor) or out.shape != x.shape or out.dtype != x.dtype:
        return "probe: output not shaped and typed like its input"
    x64 = x.double()
    ref = x64 * torch.rsqrt(x64.square().mean(-1, keepdim=True) + eps) * weight.detach().double().cpu()
    out = out.double().cpu()
    scale = torch.maximum(ref.abs().amax(-1), out.abs().amax(-1)).clamp_min(1e-30)
    err = ((out - ref).abs().amax(-1) / scale).max().item()
    tol = _probe_tol(weight.dtype)
    if not err <= tol:
        return f"probe: not x / sqrt(mean(x^2) + {eps:g}) * weight (relative error {err:.2g} > {tol:g})"
    return None


def _gated(m: nn.Module) -> tuple[FusedGatedLinear | None, str | None]:
    """FusedGatedLinear for a gated unit: one nn.Linear (proj) and parameterless other children, m(x) ==
    a * act(g) with (a, g) = proj(x).chunk(2, -1) (or swapped) on a probe input; else (None, why)."""
    children = list(m.children())
    linears = [c for c in children if type(c) is nn.Linear]
    if (len(linears) != 1 or next(m.parameters(recurse=False), None) is not None
            or any(next(c.parameters(), None) is not None for c in children if c is not linears[0])):
        return None, "no fused op for it (a gated unit here holds one nn.Linear and parameterless activations)"
    proj = linears[0]
    if proj.out_features % 2:
        return None, f"its projection has {proj.out_features} outputs: an odd count has no two halves"
    x, seen = torch.randn(8, proj.in_features, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 2, []
    hook = proj.register_forward_hook(lambda _, __, out: seen.append(out))
    try:
        out, why = _probe(m, x, proj.weight)
    finally:
        hook.remove()
    if why:
        return None, why
    if len(seen) != 1 or not isinstance(out, torch.Tensor) or out.shape != (8, proj.out_features // 2):
        return None, "probe: not one projection whose output's halves give the module's output"
    halves, out = seen[0].double().cpu().chunk(2, -1), out.double().cpu()
    tol = _probe_tol(proj.weight.dtype)
    fits = []  # (mean error, activation, gate) of each form within tol
    for gate, (a, g) in (("second", halves), ("first", halves[::-1])):
        for act in GATED_ACTIVATIONS:
            err = (out - a * ACTIVATIONS[act](g)).abs()
            if err.amax().item() <= tol * max(out.abs().amax().item(), 1e-30):
                fits.append((err.mean().item(), act, gate))
    if not fits:
        return None, f"probe: not a * act(g) of its projection's halves for act in {', '.join(GATED_ACTIVATIONS)}"
    _, act, gate = min(fits, key=lambda f: f[0])
    return FusedGatedLinear(proj, act, gate), None


# --- SiLU after GroupNorm, an add before it, an activation's product: the forward, rewritten ---------


def _forward_tree(parent: nn.Module):
    """(the parsed source of type(parent).forward, its function), or (None, why not)."""
    fn = type(parent).forward
    where = f"{type(parent).__name__}.forward"
    raw = inspect.unwrap(fn)
    if raw.__code__.co_freevars:
        return None, f"{where} reads an enclosing scope (super(), a closure)"
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(raw)))
    except (OSError, TypeError, SyntaxError) as e:
        return None, f"{where}: source not available ({e})"
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef) or not fdef.args.args:
        return None, f"{where} is not a plain method"
    return tree, raw


def _gating_activations(parent: nn.Module, products: dict) -> dict[str, str]:
    """{attribute: activation} of parent's children called as `self.<a>(x) * y` (either side) in its
    forward that compute a gated activation on a probe. products: forward -> those attributes (a cache)."""
    fn = type(parent).forward
    if isinstance(parent, _FUSED) or "forward" in vars(parent) or fn is nn.Module.forward:
        return {}
    if fn not in products:
        tree, _ = _forward_tree(parent)
        me = None if tree is None else tree.body[0].args.args[0].arg
        products[fn] = set() if tree is None else {c.func.attr for c in _Products.calls(tree, me)}
    acts = {}
    for attr in products[fn]:
        act = _activation(getattr(parent, attr, None))
        if act:
            acts[attr] = act
    return acts


def _activation(m) -> str | None:
    """The gated activation a parameterless leaf module computes (on a probe over [-6, 6]), or None."""
    if (not isinstance(m, nn.Module) or isinstance(m, _FUSED) or next(m.children(), None) is not None
            or next(m.parameters(), None) is not None):
        return None
    x = torch.linspace(-6, 6, 97)
    try:
        with torch.no_grad():
            out = m(x)
    except Exception:  # not an activation of one tensor
        return None
    if not isinstance(out, torch.Tensor) or out.shape != x.shape or out.dtype != x.dtype:
        return None
    return next((a for a in GATED_ACTIVATIONS if torch.allclose(out, ACTIVATIONS[a](x), rtol=1e-6, atol=1e-7)), None)


def _fold_calls(parent: nn.Module, norms: set[str], silus: set[str], skip: bool, acts: dict[str, str] | None = None,
                silu_norms: set[str] | None = None):
    """Rewrite parent.forward so `h = self.<norm>(...); h = self.<silu>(h)` (norm in silu_norms, default
    norms) becomes one call with activation="silu"; (skip) `h = x + t; h = self.<norm>(h)` and
    `self.<norm>(x + t)` one with skip=t, and `h = x + t; r = h; n = self.<norm>(h)` (a residual stream)
    `n, r = self.<norm>(x, skip=t, output_sum=True)`; and `self.<act>(a) * b` (act in acts)
    `self.<act>(a, gated=b)`. Returns ({norm attribute: [SiLU call sites]}, {norm attribute: [skip call
    sites]}, {act attribute: [product sites]}, why nothing was rewritten)."""
    where = f"{type(parent).__name__}.forward"
    if "forward" in vars(parent):
        return {}, {}, {}, f"{where} was replaced on the instance"
    tree, raw = _forward_tree(parent)
    if tree is None:
        return {}, {}, {}, raw
    fdef = tree.body[0]
    me = fdef.args.args[0].arg
    rewrite = _Rewrite(me, norms, silus, skip, norms if silu_norms is None else silu_norms)
    rewrite.visit(fdef.body)
    if skip:
        _InlineAdds(me, norms, rewrite.skips).visit(fdef)
    products = _Products(me, set(acts or ()))
    products.visit(fdef)
    if not rewrite.sites and not rewrite.skips and not products.sites:
        return {}, {}, {}, None
    for a in fdef.args.args + fdef.args.kwonlyargs + fdef.args.posonlyargs:
        a.annotation = None  # not evaluated again (forward references, TYPE_CHECKING imports)
    for a in filter(None, (fdef.args.vararg, fdef.args.kwarg)):
        a.annotation = None
    fdef.returns, fdef.args.defaults = None, []
    fdef.args.kw_defaults = [None] * len(fdef.args.kwonlyargs)
    decorators, fdef.decorator_list = fdef.decorator_list, []
    first = raw.__code__.co_firstlineno  # the first decorator's line, where getsource starts
    ast.increment_lineno(tree, first - 1)
    file, scope = raw.__code__.co_filename, {}
    exec(compile(ast.fix_missing_locations(tree), file, "exec"), raw.__globals__, scope)
    new = scope[fdef.name]
    new.__defaults__, new.__kwdefaults__ = raw.__defaults__, raw.__kwdefaults__
    new.__qualname__, new.__module__, new.__doc__ = raw.__qualname__, raw.__module__, raw.__doc__
    for d in reversed(decorators):  # evaluated again in the module's globals, as when the class was made
        new = eval(compile(ast.Expression(d), file, "eval"), raw.__globals__)(new)
    parent.forward = types.MethodType(new, parent)
    found: tuple[dict, dict, dict] = (defaultdict(list), defaultdict(list), defaultdict(list))
    for sites, out in zip((rewrite.sites, rewrite.skips, products.sites), found):
        for attr, what, line in sites:
            out[attr].append(f"{where} line {line + first - 1}: {what}")
    return (*map(dict, found), None)


def _self_call(node, me: str) -> bool:
    """node is `<me>.<attr>(a)`: a call of an attribute of the forward's first parameter with one plain argument."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == me and len(node.args) == 1
            and not node.keywords and not isinstance(node.args[0], ast.Starred))


class _Products(ast.NodeTransformer):
    """`self.<act>(a) * b` or `b * self.<act>(a)` (act in acts) -> `self.<act>(a, gated=b)`."""

    def __init__(self, me: str, acts: set[str]):
        self.me, self.acts = me, acts
        self.sites: list[tuple] = []  # (act, "self.<act>(...) * ...", line)

    @staticmethod
    def calls(tree, me: str) -> list[ast.Call]:
        """The self-calls of one argument that are an operand of a product in tree."""
        return [c for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult)
                for c in (n.left, n.right) if _self_call(c, me)]

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Mult):
            for call, other in ((node.left, node.right), (node.right, node.left)):
                if _self_call(call, self.me) and call.func.attr in self.acts:
                    call.keywords.append(ast.keyword(arg="gated", value=other))
                    self.sites.append((call.func.attr, f"self.{call.func.attr}(...) * ...", node.lineno))
                    return ast.copy_location(call, node)
        return node


class _InlineAdds(ast.NodeTransformer):
    """`self.<norm>(x + t)` -> `self.<norm>(x, skip=t)` (x and t evaluated in the same order)."""

    def __init__(self, me: str, norms: set[str], sites: list):
        self.me, self.norms, self.sites = me, norms, sites

    def visit_Call(self, node):
        self.generic_visit(node)
        if (_self_call(node, self.me) and node.func.attr in self.norms and isinstance(node.args[0], ast.BinOp)
                and isinstance(node.args[0].op, ast.Add)):
            add = node.args[0]
            node.args[0] = add.left
            node.keywords.append(ast.keyword(arg="skip", value=add.right))
            self.sites.append((node.func.attr, f"skip={ast.unparse(add.right)}", node.lineno))
        return node


class _Rewrite:
    def __init__(self, me: str, norms: set[str], silus: set[str], skip: bool = False,
                 silu_norms: set[str] | None = None):
        self.me, self.norms, self.silus, self.skip = me, norms, silus, skip
        self.silu_norms = norms if silu_norms is None else silu_norms
        self.sites: list[tuple] = []  # (norm, "self.<silu>", line)
        self.skips: list[tuple] = []  # (norm, "skip=<t>", line)

    def _call(self, st, attrs: set[str]) -> tuple[str, ast.Call] | None:
        """(h, the call) for `h = self.<attr>(...)`."""
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute)
                and isinstance(st.value.func.value, ast.Name) and st.value.func.value.id == self.me
                and st.value.func.attr in attrs):
            return st.targets[0].id, st.value
        return None

    def _silu_of(self, st, var: str) -> bool:
        """st is `var = self.<silu>(var)`."""
        c = self._call(st, self.silus)
        return (c is not None and c[0] == var and not c[1].keywords and len(c[1].args) == 1
                and isinstance(c[1].args[0], ast.Name) and c[1].args[0].id == var)

    def _norm(self, st, attrs: set[str] | None = None) -> tuple[str, ast.Call] | None:
        c = self._call(st, self.norms if attrs is None else attrs)
        ok = c is not None and all(k.arg not in (None, "activation") for k in c[1].keywords)
        return c if ok else None

    def _added(self, st) -> tuple[str, str, str] | None:
        """(h, x, t) for `h = x + t` (names; h itself, when one of them, as x: IEEE addition commutes
        exactly), or for `h = h + t` alone under `if t is not None:` (h unchanged when t is None)."""
        if (isinstance(st, ast.If) and not st.orelse and len(st.body) == 1 and isinstance(st.test, ast.Compare)
                and isinstance(st.test.left, ast.Name) and len(st.test.ops) == 1
                and isinstance(st.test.ops[0], ast.IsNot) and isinstance(st.test.comparators[0], ast.Constant)
                and st.test.comparators[0].value is None):
            inner = self._added(st.body[0])
            return inner if inner and inner[0] == inner[1] and inner[2] == st.test.left.id else None
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and isinstance(st.value, ast.BinOp) and isinstance(st.value.op, ast.Add)
                and isinstance(st.value.left, ast.Name) and isinstance(st.value.right, ast.Name)):
            return None
        h, a, b = st.targets[0].id, st.value.left.id, st.value.right.id
        return (h, b, a) if b == h and a != h else (h, a, b)

    @staticmethod
    def _of_sum(call: ast.Call, h: str, taken: tuple) -> bool:
        """call is `self.<norm>(h)` with none of the keywords `taken`."""
        return (len(call.args) == 1 and isinstance(call.args[0], ast.Name) and call.args[0].id == h
                and all(k.arg not in taken for k in call.keywords))

    def _fold_add(self, call: ast.Call, added: tuple, line: int, output_sum: bool = False) -> None:
        """`self.<norm>(h)` -> `self.<norm>(x, skip=t)` (+ output_sum=True) for the add (h, x, t)."""
        call.args[0] = ast.Name(added[1], ast.Load())
        call.keywords.append(ast.keyword(arg="skip", value=ast.Name(added[2], ast.Load())))
        if output_sum:
            call.keywords.append(ast.keyword(arg="output_sum", value=ast.Constant(True)))
        self.skips.append((call.func.attr, f"skip={added[2]}" + (", output_sum" if output_sum else ""), line))

    def _skip_of(self, st, nxt) -> bool:
        """Folds `h = x + t` (st) into the norm call `h = self.<norm>(h)` (nxt): `h = self.<norm>(x, skip=t)`
        (h is overwritten at once, so its sum is read by the norm alone)."""
        added, c = self._added(st), self._norm(nxt) if nxt is not None else None
        if not (self.skip and added and c and c[0] == added[0] and self._of_sum(c[1], added[0], ("skip",))):
            return False
        self._fold_add(c[1], added, nxt.lineno)
        return True

    def _sum_of(self, body: list, i: int) -> bool:
        """Folds a residual stream's `h = x + t; r = h; n = self.<norm>(h)` (body[i:i + 3]) into `n, r =
        self.<norm>(x, skip=t, output_sum=True)`, followed by `h = r` where h is neither n nor r."""
        if not self.skip or i + 2 >= len(body):
            return False
        added, alias, c = self._added(body[i]), body[i + 1], self._norm(body[i + 2])
        if not (added and isinstance(body[i], ast.Assign) and c and isinstance(alias, ast.Assign)
                and len(alias.targets) == 1 and isinstance(alias.targets[0], ast.Name)
                and isinstance(alias.value, ast.Name) and alias.value.id == added[0] != alias.targets[0].id
                and self._of_sum(c[1], added[0], ("skip", "output_sum")) and c[0] != alias.targets[0].id):
            return False
        h, r, n = added[0], alias.targets[0].id, c[0]
        self._fold_add(c[1], added, body[i + 2].lineno, output_sum=True)
        folded = ast.Assign(targets=[ast.Tuple([ast.Name(n, ast.Store()), ast.Name(r, ast.Store())], ast.Store())],
                            value=c[1])
        body[i:i + 3] = [ast.copy_location(folded, body[i + 2])] + (
            [] if h in (n, r) else [ast.copy_location(ast.Assign([ast.Name(h, ast.Store())], ast.Name(r, ast.Load())),
                                                      body[i + 2])])
        return True

    def _branch_ends(self, st: ast.If) -> list:
        tails = [st.body[-1]]
        if len(st.orelse) == 1 and isinstance(st.orelse[0], ast.If):
            return tails + self._branch_ends(st.orelse[0])
        return tails + st.orelse[-1:]

    def _sink(self, st: ast.If, stmt) -> None:
        st.body.append(copy.deepcopy(stmt))
        if len(st.orelse) == 1 and isinstance(st.orelse[0], ast.If):
            self._sink(st.orelse[0], stmt)
        else:
            st.orelse.append(copy.deepcopy(stmt))

    def visit(self, body: list) -> None:
        i = 0
        while i < len(body):
            st, nxt = body[i], body[i + 1] if i + 1 < len(body) else None
            if self._skip_of(st, nxt):  # the add's statement gives way to the norm's
                del body[i]
                st, nxt = body[i], body[i + 1] if i + 1 < len(body) else None
            elif self._sum_of(body, i):
                st, nxt = body[i], body[i + 1] if i + 1 < len(body) else None
            if isinstance(st, ast.If) and nxt is not None:
                target = nxt.targets[0].id if self._call(nxt, self.silus) else None
                if target and self._silu_of(nxt, target) and any(
                        (c := self._norm(t, self.silu_norms)) and c[0] == target for t in self._branch_ends(st)):
                    self._sink(st, nxt)  # the same statement on every path, now inside each branch
                    del body[i + 1]
                    nxt = body[i + 1] if i + 1 < len(body) else None
            for inner in _bodies(st):
                self.visit(inner)
            c = self._norm(st, self.silu_norms)
            if c is not None and nxt is not None and self._silu_of(nxt, c[0]):
                c[1].keywords.append(ast.keyword(arg="activation", value=ast.Constant("silu")))
                self.sites.append((c[1].func.attr, f"self.{nxt.value.func.attr}", st.lineno))
                del body[i + 1]
            i += 1


def _bodies(st: ast.stmt) -> list[list]:
    """The statement lists inside st (if/for/while/with/try bodies)."""
    lists = [getattr(st, n) for n in ("body", "orelse", "finalbody") if isinstance(getattr(st, n, None), list)]
    lists += [h.body for h in getattr(st, "handlers", [])]
    return [b for b in lists if b and isinstance(b[0], ast.stmt)]
