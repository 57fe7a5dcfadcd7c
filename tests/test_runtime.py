"""Deployment runtime. Inference needs a GPU and full TensorRT (marker gpu); on the CPU
the tests check the real failure paths of the real runtimes."""
import threading

import numpy as np
import onnx
import pytest

from trtplugins import runtime as R



def _cuda_ok():
    try:
        from cuda.bindings import runtime as rt
    except ImportError:
        return False
    err, n = rt.cudaGetDeviceCount()
    return err == rt.cudaError_t.cudaSuccess and n > 0


def test_missing_plan_and_bad_backend(tmp_path):
    with pytest.raises(R.EngineError, match="no such file"):
        R.Engine(tmp_path / "none.plan", plugins=False)
    with pytest.raises(R.EngineError, match="backend 'cupy'"):
        R.Engine(b"x", backend="cupy", plugins=False)
    with pytest.raises(R.EngineError, match="no TensorRT runtime found"):
        R.trt_module("tensorrt_does_not_exist")


def test_no_gpu_fails_cleanly():
    """Without a CUDA device the lean / RTX runtimes may crash on Runtime(); we stop before that."""
    pytest.importorskip("cuda.bindings", reason="cuda-python not installed")
    if _cuda_ok():
        pytest.skip("a CUDA device is present")
    with pytest.raises(R.EngineError, match=r"CUDA device 0 unavailable \(no usable GPU or NVIDIA driver here\)"):
        R.Engine(b"not a plan", plugins=False)


def test_plugin_library_path_errors(tmp_path):
    mod = R.trt_module()
    with pytest.raises(R.EngineError, match="no such file"):
        R.load_plugins(mod, tmp_path / "libnone.so")
    assert R.load_plugins(mod, False) is None


@pytest.mark.gpu
def test_demo_engine_threads(tmp_path):
    """Build the substituted demo (full TensorRT), run it from 4 threads with different shapes,
    compare with ONNX Runtime on the original model."""
    pytest.importorskip("tensorrt", reason="full TensorRT (module tensorrt) not installed")
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime not installed")
    from trtplugins import engine as B

    from trtplugins.demo import make_model

    demo = tmp_path / "demo.onnx"
    onnx.save(make_model(), demo)
    res, _ = B.build_file(demo, log=lambda *_: None, progress=False, shapes=B.parse_shapes(["x:1x1x64/2x64x64/4x128x64"]))
    sess = ort.InferenceSession(str(demo), providers=["CPUExecutionProvider"])
    errors, worst = [], []
    with R.Engine(res.plan) as eng:
        assert eng.inputs == ["x"] and eng.outputs == ["y"]

        def work(i):
            try:
                rng = np.random.default_rng(i)
                for seq in (1, 17, 64, 128):
                    x = rng.random((1 + i % 4, seq, 64), dtype=np.float32)
                    y = eng({"x": x})["y"]
                    worst.append(float(np.abs(y - sess.run(None, {"x": x})[0]).max()))
            except Exception as e:  # surfaced below
                errors.append(e)

        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors
        assert len(eng._slots) == 4  # one context per thread
    assert max(worst) < 5e-3
