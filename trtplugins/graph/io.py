"""Loading and saving models with clear errors, the checks every tool runs first, and large models.

Large models (weights over protobuf's 2 GiB, so stored as ONNX external data) are never loaded
into one protobuf: load_model keeps their large tensors as external references and loads only
the small ones the patterns read (norm weights, biases, scalars). The references point into a
per-process workspace folder (copies of the user's data files, which are never written), so
the graph tools, ONNX Runtime and TensorRT's parser resolve them the same way: run graph work
inside `in_workspace()`, and hand files to runtimes with `model_file()`. save_model streams the
large tensors into `<output>.data`, one tensor at a time.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import external_data_helper, numpy_helper

from ..paths import replacing
from .errors import GraphError
from .repair import repaired

#: a model whose weights (inline + external) reach this is handled as a large model
LARGE_MODEL_BYTES = 2**31 - 2**26
#: tensors up to this size are loaded even in a large model (the patterns read them)
SMALL_TENSOR_BYTES = 1 << 20

_workspace: Path | None = None
_copies: dict[str, str] = {}  # user's data file -> its name in the workspace


def workspace() -> Path:
    """This process's folder for external data (symlinks to the user's files, offloaded tensors)."""
    global _workspace
    if _workspace is None:
        _workspace = Path(tempfile.mkdtemp(prefix="trtplugins-data-"))
        atexit.register(shutil.rmtree, _workspace, True)
    return _workspace


def _external(t: onnx.TensorProto) -> bool:
    return t.data_location == onnx.TensorProto.EXTERNAL


def _info(t: onnx.TensorProto) -> dict[str, str]:
    return {e.key: e.value for e in t.external_data}


def _set_info(t: onnx.TensorProto, location: str, offset: int, length: int) -> None:
    del t.external_data[:]
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        t.external_data.add(key=k, value=v)
    t.data_location = onnx.TensorProto.EXTERNAL


def _tensor_bytes(t: onnx.TensorProto) -> int:
    if _external(t):
        n = _info(t).get("length")
        return int(n) if n else int(np.prod(t.dims, dtype=np.int64)) * 4
    return len(t.raw_data) or t.ByteSize()


def _tensors(model: onnx.ModelProto):
    """Initializers and Constant-node tensors of the main graph (where weights live)."""
    yield from model.graph.initializer
    for n in model.graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                yield a.t


def is_large(model: onnx.ModelProto) -> bool:
    """True when some weight stays external (in the workspace) instead of in the protobuf."""
    return any(_external(t) for t in _tensors(model))


def _copy_in(base: Path, location: str) -> str:
    """The workspace name of a copy of the user's data file base/location, made once per file.
    A copy, because onnx refuses external data behind a symbolic link or a second hard link."""
    target = (base / location).resolve()
    if not target.is_file():
        raise GraphError(f"external data {location!r} not found next to the model (looked for {target})")
    if str(target) not in _copies:
        name = f"copy{len(_copies)}_{target.name}"
        shutil.copyfile(target, workspace() / name)  # sendfile / copy_file_range: no pass through Python
        _copies[str(target)] = name
    return _copies[str(target)]


def _load_large(path: Path, model: onnx.ModelProto) -> None:
    base = path.parent
    for t in _tensors(model):
        if not _external(t):
            continue
        info = _info(t)
        if _tensor_bytes(t) <= SMALL_TENSOR_BYTES:
            external_data_helper.load_external_data_for_tensor(t, str(base))
            t.data_location = onnx.TensorProto.DEFAULT
            del t.external_data[:]
        else:
            _set_info(t, _copy_in(base, info["location"]), int(info.get("offset", 0)), _tensor_bytes(t))


def load_model(path: str | Path) -> onnx.ModelProto:
    """Load and check an ONNX model; GraphError says what is wrong with the file."""
    path = Path(path)
    if path.is_dir():
        raise GraphError(f"{path}: is a folder, not an ONNX file")
    if not path.is_file():
        raise GraphError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise GraphError(f"{path}: empty file, not an ONNX model")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as e:  # protobuf DecodeError, ...
        raise GraphError(f"{path}: not a readable ONNX model (truncated or another format?): {e}") from None
    if not model.opset_import or not model.HasField("graph") or not (len(model.graph.node) or len(model.graph.output)):
        raise GraphError(f"{path}: not an ONNX model (no graph or opset_import)")
    try:
        if path.stat().st_size + sum(_tensor_bytes(t) for t in _tensors(model) if _external(t)) >= LARGE_MODEL_BYTES:
            _load_large(path, model)
        else:
            external_data_helper.load_external_data_for_model(model, str(path.parent))
    except (OSError, ValueError, KeyError) as e:
        raise GraphError(f"{path}: external data could not be read: {e}") from None
    # what ONNX Runtime runs is accepted; substitute() says what it changed
    try:
        with in_workspace(model):
            repaired(model)
    except GraphError as e:
        raise GraphError(f"{path}: {e}") from None
    return model


@contextlib.contextmanager
def in_workspace(model: onnx.ModelProto | None = None):
    """Run graph work (onnx-graphsurgeon, onnx.checker, numpy_helper) where a large model's external
    references resolve: the current directory is the workspace until the block ends (a no-op for
    a `model` that is not large)."""
    if model is not None and not is_large(model):
        yield
        return
    old = os.getcwd()
    os.chdir(workspace())
    try:
        yield
    finally:
        os.chdir(old)


def tensor_array(t: onnx.TensorProto) -> np.ndarray:
    """A tensor's values, external ones read from the workspace."""
    return numpy_helper.to_array(t, str(workspace()) if _external(t) else "")


def offload(t: onnx.TensorProto) -> onnx.TensorProto:
    """Move a large tensor's raw data into a workspace file (keeps the protobuf small). Returns t."""
    if _external(t) or len(t.raw_data) <= SMALL_TENSOR_BYTES:
        return t
    fd, name = tempfile.mkstemp(prefix="tensor", suffix=".bin", dir=workspace())
    with os.fdopen(fd, "wb") as f:
        f.write(t.raw_data)
    _set_info(t, Path(name).name, 0, len(t.raw_data))
    t.ClearField("raw_data")
    return t


def model_file(model: onnx.ModelProto) -> Path | None:
    """For a large model, the model saved in the workspace (its references resolve there), for
    runtimes that take a path (ONNX Runtime, TensorRT's parser); None for a model that fits in
    one protobuf (pass model.SerializeToString())."""
    if not is_large(model):
        return None
    fd, name = tempfile.mkstemp(prefix="model", suffix=".onnx", dir=workspace())
    with os.fdopen(fd, "wb") as f:
        f.write(model.SerializeToString())
    return Path(name)


def save_model(model: onnx.ModelProto, path: str | Path, flag: str = "output") -> None:
    """Save a model; large tensors (external ones and any over SMALL_TENSOR_BYTES in a model too
    large for one protobuf) are streamed into `<path name>.data` beside it. Each file is written
    beside its target and renamed (paths.replacing): a failure leaves the old files, as a PathError."""
    path = Path(path)
    if not is_large(model) and model.ByteSize() < LARGE_MODEL_BYTES:
        with replacing(path, flag) as tmp:
            onnx.save(model, str(tmp))
        return
    out = onnx.ModelProto()
    out.CopyFrom(model)  # small: large tensors are external references
    data_name = path.name + ".data"
    offset = 0
    with replacing(path, flag) as tmp_model, replacing(path.parent / data_name, flag) as tmp_data:
        with open(tmp_data, "wb") as f:
            for t in _tensors(out):
                if _external(t):
                    info = _info(t)
                    src, start, length = workspace() / info["location"], int(info.get("offset", 0)), _tensor_bytes(t)
                    with open(src, "rb") as s:
                        s.seek(start)
                        left = length
                        while left:
                            chunk = s.read(min(left, 1 << 24))
                            if not chunk:
                                raise GraphError(f"external data of {t.name!r} is shorter than its length {length}")
                            f.write(chunk)
                            left -= len(chunk)
                elif len(t.raw_data) > SMALL_TENSOR_BYTES:
                    length = len(t.raw_data)
                    f.write(t.raw_data)
                    t.ClearField("raw_data")
                else:
                    continue
                _set_info(t, data_name, offset, length)
                offset += length
        onnx.save(out, str(tmp_model))
