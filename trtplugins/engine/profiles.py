"""Input shapes and optimization profiles: --shapes parsing, defaults for dynamic dims."""

from __future__ import annotations

from typing import Iterable, Sequence

from .errors import BuildError

Shape = tuple[int, ...]
Profile = dict[str, tuple[Shape, Shape, Shape]]

#: min/opt/max used for dynamic dims the user did not give with --shapes.
DEFAULT_BATCH = (1, 4, 16)  # dim 0
DEFAULT_DIM = (1, 128, 512)  # any other dynamic dim (sequence, spatial)


def parse_shape(text: str, flag: str = "--shapes") -> Shape:
    try:
        dims = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        raise BuildError(f"{flag}: bad shape {text!r}: expected dims joined by x, e.g. 1x128x64") from None
    if any(d <= 0 for d in dims):
        raise BuildError(f"{flag}: bad shape {text!r}: every dim must be >= 1")
    return dims


def split_name(spec: str, flag: str, example: str) -> tuple[str, str]:
    """'name:rest' -> (name, rest); names may hold ':' (the last one separates)."""
    name, sep, rest = spec.rpartition(":")
    if not sep or not name:
        raise BuildError(f"bad {flag} {spec!r}: expected {example}")
    return name, rest


def no_duplicates(names: Sequence[str], flag: str) -> None:
    dup = sorted({n for n in names if list(names).count(n) > 1})
    if dup:
        raise BuildError(f"{flag}: input {dup[0]!r} given more than once")


def parse_shapes(specs: Iterable[str]) -> Profile:
    """--shapes entries "name:min/opt/max" (or "name:shape" for a fixed shape) -> profile."""
    out: Profile = {}
    pairs = [split_name(s, "--shapes", "name:min/opt/max, e.g. x:1x1x64/4x128x64/16x512x64") for s in specs]
    no_duplicates([n for n, _ in pairs], "--shapes")
    for name, shapes in pairs:
        parts = [parse_shape(p) for p in shapes.split("/")]
        if len(parts) == 1:
            parts *= 3
        if len(parts) != 3:
            raise BuildError(f"bad --shapes {name}:{shapes}: give one shape or three (min/opt/max)")
        mn, opt, mx = parts
        if not len(mn) == len(opt) == len(mx):
            raise BuildError(f"--shapes {name}: min/opt/max have different ranks")
        if not all(a <= b <= c for a, b, c in zip(mn, opt, mx)):
            raise BuildError(f"--shapes {name}: need min <= opt <= max in every dim, got {shapes}")
        out[name] = (mn, opt, mx)
    return out


def onnx_inputs(model) -> list[tuple[str, list]]:
    """Graph inputs that are not initializers, dims as int (static) or str/None (dynamic)."""
    inits = {i.name for i in model.graph.initializer}
    res = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        dims = []
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_value") and d.dim_value >= 0:  # 0: an empty dim, refused by infer_profile
                dims.append(int(d.dim_value))
            else:
                dims.append(d.dim_param or None)
        res.append((vi.name, dims))
    return res


def fmt_shape(s: Sequence) -> str:
    return "x".join(str(d) for d in s) if len(s) else "scalar"


def infer_profile(inputs: Sequence[tuple[str, Sequence]], given: Profile | None = None,
                  flag: str = "--shapes") -> tuple[Profile, list[str]]:
    """A profile for every input: `given` (from `flag`) where given, static dims as they are,
    defaults for dynamic ones (dim 0: DEFAULT_BATCH, others: DEFAULT_DIM).

    inputs: (name, dims) with dims int, or None / -1 / a dim name for dynamic.
    Returns the profile and one note per defaulted input (to print).
    """
    given = dict(given or {})
    names = [n for n, _ in inputs]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise BuildError(f"{flag}: {', '.join(map(repr, unknown))} {'is not a model input' if len(unknown) == 1 else 'are not model inputs'}; "
                         f"inputs: {names}")
    prof: Profile = {}
    notes = []
    for name, dims in inputs:
        dyn = lambda d: not isinstance(d, int) or d < 0  # noqa: E731
        empty = [i for i, d in enumerate(dims) if isinstance(d, int) and d == 0]
        if empty:
            raise BuildError(f"input {name!r}: dim {empty[0]} has size 0 in the model (an empty tensor); "
                             f"export it with a real or a dynamic size")
        if name in given:
            mn, opt, mx = given.pop(name)
            if len(mn) != len(dims):
                raise BuildError(f"{flag} {name}: rank {len(mn)} but the input has rank {len(dims)} "
                                 f"({fmt_shape(['?' if dyn(d) else d for d in dims])})")
            for i, d in enumerate(dims):
                if not dyn(d) and not mn[i] == opt[i] == mx[i] == d:
                    raise BuildError(f"{flag} {name}: dim {i} is static {d} in the model, got "
                                     f"{mn[i]}/{opt[i]}/{mx[i]}")
            prof[name] = (mn, opt, mx)
            continue
        cols, said = [], []
        for i, d in enumerate(dims):
            if dyn(d):
                r = DEFAULT_BATCH if i == 0 else DEFAULT_DIM
                said.append(f"dim {i}{f' ({d})' if isinstance(d, str) else ''} = {r[0]}/{r[1]}/{r[2]}")
            else:
                r = (d, d, d)
            cols.append(r)
        prof[name] = tuple(tuple(c[k] for c in cols) for k in range(3))  # type: ignore[assignment]
        if said:
            mn, opt, mx = prof[name]
            notes.append(f"profile {name}: {', '.join(said)} -> min {fmt_shape(mn)} opt {fmt_shape(opt)} "
                         f"max {fmt_shape(mx)} (defaults; set with {flag} {name}:MIN/OPT/MAX)")
    return prof, notes
