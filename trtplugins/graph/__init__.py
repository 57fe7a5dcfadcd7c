"""ONNX graph tools: find fusable subgraphs, replace them with plugin nodes, convert to
FP16, and evaluate substituted models on CPU. onnxruntime and torch are imported only
by the functions that need them."""

from __future__ import annotations

from .errors import GraphError
from .evaluate import Evaluator, evaluate
from .fp16 import convert_fp16
from .io import load_model
from .surgery import Report, substitute

__all__ = ["Evaluator", "GraphError", "Report", "convert_fp16", "evaluate", "load_model", "substitute"]
