"""What a build produced: layers by type, plugin layers, I/O bindings, as text and JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .profiles import Profile, fmt_shape


@dataclass
class BuildResult:
    plan: bytes
    backend: str
    seconds: float
    layers: dict[str, int]  # layer type -> count
    plugin_layers: list[tuple[str, str]]  # (layer name, type)
    layer_source: str  # "engine" or "network"
    io: list[dict]
    notes: list[str] = field(default_factory=list)
    substitution: Any = None
    path: str | None = None

    def summary(self) -> str:
        lines = [f"engine: {self.path or '(not saved)'}  {len(self.plan) / 2**20:.2f} MiB  built in "
                 f"{self.seconds:.2f} s with {self.backend}"]
        lines.append(f"layers ({self.layer_source}): {sum(self.layers.values())}")
        for t, c in sorted(self.layers.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {t:<28}{c}")
        if self.plugin_layers:
            lines.append(f"plugin layers: {len(self.plugin_layers)}")
            lines += [f"  {name}  [{t}]" for name, t in self.plugin_layers]
        lines.append("bindings:")
        for b in self.io:
            prof = f"  profile {' / '.join(fmt_shape(s) for s in b['profile'])}" if b.get("profile") else ""
            lines.append(f"  {b['mode']:<6} {b['name']}: {b['dtype']} {fmt_shape(b['shape'])}{prof}")
        lines += self.notes
        return "\n".join(lines)

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("path", "backend", "seconds", "layers", "layer_source", "io", "notes")}
        d["size"] = len(self.plan)
        d["plugin_layers"] = [name for name, _ in self.plugin_layers]
        d["plugin_layer_types"] = [t for _, t in self.plugin_layers]
        if self.substitution is not None and hasattr(self.substitution, "to_dict"):
            d["substitution"] = self.substitution.to_dict()
        return d


    @classmethod
    def from_dict(cls, d: dict, plan: bytes) -> "BuildResult":
        """The result to_dict() described (without its substitution report), with its plan."""
        plugins = list(zip(d["plugin_layers"], d["plugin_layer_types"]))
        return cls(plan, d["backend"], d["seconds"], d["layers"], plugins, d["layer_source"], d["io"], d["notes"],
                   path=d["path"])


def _enum(v) -> str:
    return str(v).split(".")[-1]


def network_layers(net) -> tuple[dict[str, int], list[tuple[str, str]]]:
    counts: dict[str, int] = {}
    plugins = []
    for i in range(net.num_layers):
        layer = net.get_layer(i)
        t = _enum(layer.type)
        counts[t] = counts.get(t, 0) + 1
        if t.startswith("PLUGIN"):
            plugins.append((layer.name, t))
    return counts, plugins


def engine_layers(trt, engine) -> tuple[dict[str, int], list[tuple[str, str]]]:
    info = json.loads(engine.create_engine_inspector().get_engine_information(trt.LayerInformationFormat.JSON))
    counts: dict[str, int] = {}
    plugins = []
    for layer in info.get("Layers", []):
        if isinstance(layer, str):  # profiling verbosity too low for types
            t, name = "unknown", layer
        else:
            t, name = str(layer.get("LayerType", "unknown")), str(layer.get("Name", ""))
        counts[t] = counts.get(t, 0) + 1
        if "plugin" in t.lower():
            plugins.append((name, t))
    return counts, plugins


def engine_io(trt, engine) -> list[dict]:
    io = []
    for i in range(engine.num_io_tensors):
        n = engine.get_tensor_name(i)
        inp = engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT
        b = {"name": n, "mode": "input" if inp else "output", "dtype": _enum(engine.get_tensor_dtype(n)),
             "shape": list(engine.get_tensor_shape(n))}
        if inp:
            b["profile"] = [list(s) for s in engine.get_tensor_profile_shape(n, 0)]
        io.append(b)
    return io


def network_io(net, prof: Profile) -> list[dict]:
    io = []
    for mode, count, get in (("input", net.num_inputs, net.get_input), ("output", net.num_outputs, net.get_output)):
        for i in range(count):
            t = get(i)
            b = {"name": t.name, "mode": mode, "dtype": _enum(t.dtype), "shape": list(t.shape)}
            if t.name in prof:
                b["profile"] = [list(s) for s in prof[t.name]]
            io.append(b)
    return io
