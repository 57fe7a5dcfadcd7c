"""How the GroupNorm binding reads a tensor's layout (CPU): contiguous tensors are channels-first,
channels-last ones (torch.channels_last, or views of a [N, spatial..., cs] buffer with padded channels)
give their channel stride, anything else neither; outputs are allocated in x's layout, pad included."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from trtplugins.ops import group_norm  # noqa: E402


def padded(shape, cs):
    buf = torch.zeros((shape[0],) + tuple(shape[2:]) + (cs,))
    return buf[..., : shape[1]].permute(0, len(shape) - 1, *range(1, len(shape) - 1))


@pytest.mark.parametrize("shape", [(2, 40, 5, 6), (1, 8, 3, 4, 5), (3, 12, 7)])
def test_channel_stride(shape):
    x = torch.zeros(shape)
    assert group_norm.channel_stride(x) is None or shape[2:] == (1,) * (len(shape) - 2)
    if len(shape) == 4:
        assert group_norm.channel_stride(x.contiguous(memory_format=torch.channels_last)) == shape[1]
    for cs in (shape[1], shape[1] + 8, 4 * shape[1]):
        assert group_norm.channel_stride(padded(shape, cs)) == cs
    if len(shape) >= 4:
        assert group_norm.channel_stride(padded(shape, shape[1]).transpose(2, 3)) is None  # pixels out of order
    assert group_norm.channel_stride(padded(shape, shape[1])[:, ::2]) is None  # channels not contiguous


def test_empty_like_keeps_the_layout_and_the_pad():
    x = padded((2, 20, 5, 5), 24)
    y = group_norm.empty_like(x)
    assert y.shape == x.shape and group_norm.channel_stride(y) == 24
    assert y.untyped_storage().nbytes() >= 2 * 5 * 5 * 24 * y.element_size()  # the last pixel's pad too
    c = torch.zeros(2, 20, 5, 5)
    assert group_norm.empty_like(c).is_contiguous()


def test_kernel_refuses_other_layouts_in_one_line():
    x = torch.zeros(2, 8, 4, 4).transpose(-1, -2)
    with pytest.raises(ValueError, match="contiguous or stored channels-last"):
        group_norm.kernel(x, num_groups=2, gamma=torch.ones(8))


def test_kernel_refuses_channels_last_shapes_without_a_kernel_in_one_line():
    """FP32 channels-last from 2560 channels (a pixel's packs past a CTA's threads) has no kernel: a clear error
    before any launch, not the launch's invalid argument; FP16 has one (x on the CPU is refused next)."""
    x = torch.zeros(1, 2560, 2, 2).contiguous(memory_format=torch.channels_last)
    with pytest.raises(ValueError, match="no kernel for 2560 channels of torch.float32.*pass x contiguous"):
        group_norm.kernel(x, num_groups=32, gamma=torch.ones(2560))
    with pytest.raises(ValueError, match="must be CUDA tensors"):
        group_norm.kernel(x.half(), num_groups=32, gamma=torch.ones(2560))


def test_spatial_dims_of_one_are_both_layouts():
    """[N, C, 1, 1] (a UNet's time embedding, an 8x8 feature map pooled): contiguous and channels-last at
    once; the binding's layout argument says which kernel, the stride check accepts either."""
    for n in (1, 2):
        x = torch.zeros(n, 32, 1, 1)
        assert group_norm.channel_stride(x) == 32
        assert group_norm.channel_stride(padded((n, 32, 1, 1), 40)) == (40 if n > 1 else 32)
