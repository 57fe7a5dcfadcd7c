"""The points scripts/bench_kernels.py times, as plain data (no torch: --help works without it)."""

KNAME = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}  # the kernel library's dtype names
HIDDENS = (768, 1024, 2048, 3072, 4096, 5120, 8192, 12288, 16384)
ODD = (4100, 5121, 12289)
SMALL = ((1, 768), (8, 768), (64, 768), (1, 4096), (64, 4096))
X_BYTES = 96 * 2**20
LOOP = 6  # variant index of the first looped-path kernel (variants.cuh kLoop)
HOIST = 32  # on a looped variant: each row prefetched into L2 first (variants.cuh kHoistBit)
GN_OPS = ("group_norm", "group_norm_silu")
GATED_OPS = ("swiglu", "geglu")
OPS = ("layer_norm", "skip_layer_norm", "rms_norm", "skip_rms_norm", "bias_gelu", "bias_relu6") + GN_OPS + GATED_OPS
#: GroupNorm points (N, C, H, W), 32 groups: Stable Diffusion 1.x/2.x UNet shapes and SD-XL's
GN_SHAPES = ((2, 320, 64, 64), (2, 640, 32, 32), (8, 640, 64, 64), (2, 320, 128, 128), (2, 1280, 32, 32))
GN_GROUPS = 32
#: gated points (rows, I): SwiGLU at LLaMA-2 7B / LLaMA-3 8B intermediate sizes; GEGLU at SD 1.x (I = 1280,
#: 2560) and SD-XL (2560, 5120) token counts, and a wider one
GATED_POINTS = {"swiglu": tuple((r, i) for r in (4096, 16384) for i in (11008, 14336)),
                "geglu": ((8192, 1280), (2048, 2560), (8192, 2560), (2048, 5120), (2048, 10240))}
NORM_OPS = ("layer_norm", "skip_layer_norm", "rms_norm", "skip_rms_norm")  # the SkipNorm kernel's
