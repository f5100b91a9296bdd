"""FP8 block-scaled operands for the GPU tests, made with torch on the tensors' device: x quantized to e4m3 with one
FP32 scale per rows_per_block×128 block (its amax / 448; an all-zero block gets 1), as gemmlab.fp8's layouts hold them."""


def fp8_blocks(x, rows_per_block):
    """x (rows×K float32) quantized: the FP8 tensor, the scales (row blocks × K blocks) and each element's scale."""
    import torch

    rows, k = x.shape
    rb, kb = -(-rows // rows_per_block), -(-k // 128)
    padded = torch.zeros(rb * rows_per_block, kb * 128, device=x.device)
    padded[:rows, :k] = x
    amax = padded.abs().reshape(rb, rows_per_block, kb, 128).amax(dim=(1, 3))
    s = torch.where(amax > 0, amax / 448, torch.ones_like(amax))
    full = s.repeat_interleave(rows_per_block, 0).repeat_interleave(128, 1)[:rows, :k]
    return (x / full).to(torch.float8_e4m3fn), s, full
