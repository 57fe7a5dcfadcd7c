"""Tiny real models for tests and demos: random weights, configs built in code, no downloads.

torch and transformers are imported only when a model is built.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..paths import replacing

HF_KINDS = ("bert", "roberta", "albert", "electra")
TORCH_KINDS = ("mobilenet_v2_block", "t5_rms", "llama_rms", "mlp")
KINDS = HF_KINDS + TORCH_KINDS
MLP_ACTIVATIONS = ("relu", "relu6", "gelu", "gelu_new", "gelu_pytorch_tanh", "silu", "quick_gelu", "hardswish")

LAYERS, HIDDEN, HEADS, FFN, VOCAB = 2, 32, 2, 64, 100


def _randomize(module, seed: int = 0) -> None:
    """Non-trivial weights everywhere (HF init leaves biases 0 and norm scales 1)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            if p.ndim == 1:
                p.copy_(torch.randn(p.shape, generator=g) * 0.3 + (1.0 if bool((p == 1).all()) else 0.0))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))


def _hf_encoder(kind: str):
    import torch
    import transformers as tf

    common = dict(
        vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=FFN, max_position_embeddings=64,
    )
    cfg = {
        "bert": lambda: tf.BertConfig(**common),
        "roberta": lambda: tf.RobertaConfig(**common),
        "albert": lambda: tf.AlbertConfig(embedding_size=16, **common),
        "electra": lambda: tf.ElectraConfig(embedding_size=16, **common),
    }[kind]()
    cfg._attn_implementation = "eager"  # plain MatMul/Softmax, traceable at every opset
    model = tf.AutoModel.from_config(cfg).eval()

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    ids = torch.randint(3, VOCAB, (2, 8), generator=torch.Generator().manual_seed(0))
    return Encoder(), (ids, torch.ones_like(ids)), ["input_ids", "attention_mask"], ["hidden"], {0: "batch", 1: "seq"}


def _torch_block(kind: str, activation: str = "gelu"):
    import torch
    from torch import nn

    if kind == "mobilenet_v2_block":
        # torchvision's InvertedResidual (expand 1x1, depthwise 3x3, project 1x1, residual) in
        # plain torch: torchvision wheels need another torch build.
        def cbr(cin, cout, k, groups=1):
            return [nn.Conv2d(cin, cout, k, padding=k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout), nn.ReLU6()]

        class InvertedResidual(nn.Module):
            def __init__(self, c=8, t=4):
                super().__init__()
                self.stem = nn.Sequential(*cbr(3, c, 3))
                self.body = nn.Sequential(*cbr(c, c * t, 1), *cbr(c * t, c * t, 3, groups=c * t),
                                          nn.Conv2d(c * t, c, 1, bias=False), nn.BatchNorm2d(c))

            def forward(self, x):
                x = self.stem(x)
                return x + self.body(x)

        m = InvertedResidual()
        return m, (torch.randn(2, 3, 16, 16),), ["image"], ["features"], {0: "batch", 2: "h", 3: "w"}

    if kind in ("t5_rms", "llama_rms"):
        from transformers.models.llama.modeling_llama import LlamaRMSNorm
        from transformers.models.t5.modeling_t5 import T5LayerNorm

        norm = T5LayerNorm if kind == "t5_rms" else LlamaRMSNorm

        class PreNormBlock(nn.Module):
            """h = x + W1 n1(x); out = h + W2 n2(h): n2 also needs the sum h."""

            def __init__(self):
                super().__init__()
                self.n1, self.n2 = norm(HIDDEN, eps=1e-6), norm(HIDDEN, eps=1e-6)
                self.w1, self.w2 = nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, HIDDEN, bias=False)

            def forward(self, x):
                h = x + self.w1(self.n1(x))
                return h + self.w2(self.n2(h))

        return PreNormBlock(), (torch.randn(2, 8, HIDDEN),), ["x"], ["y"], {0: "batch", 1: "seq"}

    if kind == "mlp":
        from transformers.activations import ACT2FN

        class Mlp(nn.Module):
            def __init__(self):
                super().__init__()
                self.up, self.down, self.act = nn.Linear(HIDDEN, FFN), nn.Linear(FFN, HIDDEN), ACT2FN[activation]

            def forward(self, x):
                return self.down(self.act(self.up(x)))

        return Mlp(), (torch.randn(2, 8, HIDDEN),), ["x"], ["y"], {0: "batch", 1: "seq"}
    raise ValueError(f"unknown model kind {kind!r}; known: {KINDS}")


def build(kind: str, activation: str = "gelu", seed: int = 0):
    """(module, example inputs, input names, output names, dynamic dims)."""
    import torch

    torch.manual_seed(seed)
    built = _hf_encoder(kind) if kind in HF_KINDS else _torch_block(kind, activation)
    built[0].eval()
    _randomize(built[0], seed)
    return built


def export(kind: str, path: str | Path, opset: int = 17, dynamo: bool = False, activation: str = "gelu") -> Path:
    """Export one tiny model to ONNX (TorchScript exporter, or dynamo=True)."""
    import torch

    module, args, inputs, outputs, dims = build(kind, activation)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as tmp:
        if dynamo:
            shapes = {name: {axis: torch.export.Dim.AUTO for axis in dims} for name in inputs}
            arg_names = list(module.forward.__code__.co_varnames[1 : 1 + len(inputs)])
            shapes = {a: shapes[n] for a, n in zip(arg_names, inputs)}
            torch.onnx.export(module, args, str(tmp), input_names=inputs, output_names=outputs, opset_version=opset,
                              dynamo=True, dynamic_shapes=shapes, verbose=False, external_data=False)
        else:
            torch.onnx.export(module, args, str(tmp), input_names=inputs, output_names=outputs, opset_version=opset,
                              dynamo=False, dynamic_axes={n: dims for n in inputs + outputs})
    return path


def main(argv: list[str] | None = None, prog: str = "trtplugins export-models") -> int:
    """`trtplugins export-models` (scripts/export_models.py): the tiny test models as ONNX (needs torch)."""
    import argparse
    import sys

    from ..paths import PathError

    ap = argparse.ArgumentParser(prog=prog, description="Export the tiny test models (random weights, no downloads) "
                                                        "to ONNX, as OUT/<kind>_op<opset>[_dynamo].onnx; needs torch "
                                                        "and transformers (pip install 'trtplugins[export]').")
    ap.add_argument("out", type=Path, help="folder to write the models into (made if missing)")
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS, metavar="KIND",
                    help=f"models to export (default all: {', '.join(KINDS)})")
    ap.add_argument("--opsets", nargs="+", type=int, default=[17], metavar="N", help="ONNX opsets (default 17)")
    ap.add_argument("--dynamo", action="store_true", help="use the dynamo exporter (opset >= 18)")
    args = ap.parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        print(f"error: {args.out}: is a file, not a folder", file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        print(f"error: exporting the models needs torch and transformers ({e}): pip install 'trtplugins[export]'",
              file=sys.stderr)
        return 2
    try:
        for kind in args.kinds:
            for opset in args.opsets:
                print(export(kind, args.out / f"{kind}_op{opset}{'_dynamo' if args.dynamo else ''}.onnx", opset,
                             args.dynamo))
    except PathError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
