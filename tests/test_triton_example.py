"""The Triton model repository example: its config.pbtxt parses with Triton's own model-config
protobuf (tritonclient) and names the demo model's inputs and outputs, types and dims."""
from pathlib import Path

import pytest
from google.protobuf import text_format

from trtplugins.demo import make_model

REPO = Path(__file__).resolve().parents[1] / "examples" / "triton" / "model_repository"
model_config_pb2 = pytest.importorskip("tritonclient.grpc.model_config_pb2",
                                       reason="tritonclient[grpc] not installed (Triton's model-config protobuf)")

_ONNX_TO_TRITON = {1: "TYPE_FP32", 10: "TYPE_FP16", 16: "TYPE_BF16", 7: "TYPE_INT64", 6: "TYPE_INT32"}


def _dims(vi):
    return [d.dim_value if d.HasField("dim_value") else -1 for d in vi.type.tensor_type.shape.dim]


def test_demo_config_matches_the_demo_model():
    folder = REPO / "demo"
    cfg = text_format.Parse((folder / "config.pbtxt").read_text(), model_config_pb2.ModelConfig())
    assert cfg.name == folder.name and cfg.platform == "tensorrt_plan"
    assert (folder / "1").is_dir()  # version folder where model.plan goes
    assert cfg.max_batch_size == 0  # dims are the plan's own, batch included
    model = make_model()
    for ours, theirs in ((cfg.input, model.graph.input), (cfg.output, model.graph.output)):
        assert [t.name for t in ours] == [v.name for v in theirs]
        for t, v in zip(ours, theirs):
            assert model_config_pb2.DataType.Name(t.data_type) == _ONNX_TO_TRITON[v.type.tensor_type.elem_type]
            assert list(t.dims) == _dims(v)
    assert [g.kind for g in cfg.instance_group] == [model_config_pb2.ModelInstanceGroup.KIND_GPU]
