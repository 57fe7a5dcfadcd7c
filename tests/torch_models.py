"""Tiny models built from configs (random weights, no downloads) for the trtplugins.torch tests
(tests/test_torch_models.py on the CPU, tests/gpu/test_torch_gpu.py on a GPU)."""

from __future__ import annotations

import diffusers
import torch
import transformers as tf
from torch import nn


def randomize(model: nn.Module, seed: int = 0) -> nn.Module:
    """Norm scales and biases away from 1 and 0 (the inits would hide a wrong weight)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.copy_(1 + 0.3 * torch.randn(p.shape, generator=g))
    return model.eval()


def llama(layers=2):
    cfg = tf.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=layers, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=100, use_cache=False)
    torch.manual_seed(0)
    return randomize(tf.LlamaModel(cfg))


def unet():
    torch.manual_seed(0)
    return randomize(diffusers.UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, attention_head_dim=8, norm_num_groups=8))


UNET_ARGS = (torch.randn(2, 4, 8, 8, generator=torch.Generator().manual_seed(1)), torch.tensor([10, 500]),
             torch.randn(2, 5, 32, generator=torch.Generator().manual_seed(2)))
