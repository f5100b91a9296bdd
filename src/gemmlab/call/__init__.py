"""One call of gemmlab.matmul, below the public functions: the operands' facts (``operands``), every check and the
kernel they resolve to (``checks``), the plan cache (``plans``) and the launch for NumPy and CuPy operands
(``launch``); torch tensors launch through ``tensors`` (imported with torch, by gemmlab.torch_op and on a batch of
tensors), which shares all of this.

The first call for a (kernel, shapes, dtypes, strides, device) makes a plan: every check, the dispatcher's choice,
compilation, tensor maps, workspaces. Later calls with the same key find it in memory and only launch it: no file
access, no compilation, no DLPack conversion, no synchronization. Operands whose layout the kernel does not read in
place (a view that is neither row-major nor the transpose of a row-major matrix, or a transpose the kernel cannot
take) are copied into row-major order first, as ``plan(...).explain()`` says.

FP8 (float8_e4m3fn or float8_e5m2 operands, ml_dtypes' types for NumPy and CuPy): C = (scale_a · A)(scale_b · B)
with FP32 scales that live on the operands' device, passed by address on every call (no host read, no sync).
One scale per operand (a 1-element tensor, or None for 1) computes precision fp8; scale_a of shape (M, ⌈K/128⌉)
and scale_b of shape (⌈K/128⌉, ⌈N/128⌉) compute fp8_block (DeepGEMM's recipe, gemmlab.fp8 has the layouts; the
transposes of row-major (⌈K/128⌉, M) and (⌈N/128⌉, ⌈K/128⌉) tensors are read in place, others copied per call).
FP8 tensor cores read both operands K-major: B must come as the transpose of an N×K matrix, as torch._scaled_mm
takes it.

A batch of products (``batched_matmul``, ``Batch``: a broadcast batch with a stride per operand) runs in one launch
of a kernel that takes a strided batch (past 65535 products on a level that puts the product in gridDim.z, a
launch per 65535); on the host, numpy.matmul on the broadcast views (``batched``).
A fused epilogue (``epilogue=``, a gemmlab.epilogue.Epilogue: out = act(alpha·AB + beta·D)) is part of the key: the
kernel applies it in registers before C's store (the host kernels after their GEMM), reading ``addend=`` (the bias
vector or D, an array of the operands' kind and device, of C's dtype or float32, D with any strides) by address on
every call. A kernel named that cannot fuse it is refused; kernel="auto" picks among those that can.
A product with a zero dimension runs no kernel: ``checks.empty_dtype`` makes every check but the size's and gives
C's dtype, ``launch.array_empty`` the result (empty, or for K = 0 the epilogue of a zero product); no plan is made.
"""
from gemmlab.call import cache, checks, launch, operands
from gemmlab.call.checks import AUTO, check_out, resolve
from gemmlab.call.launch import array_matmul, gpu_memory_message, host_launch, overlaps
from gemmlab.call.operands import (AddendFacts, Facts, addend_facts, devices_differ, facts, out_dtype_name,
                                   scale_facts)
from gemmlab.call.cache import MAX_PLANS, Prepared, launchers, plans, remember, remember_launcher
from gemmlab.call import batched
from gemmlab.call.batched import Batch, batch_of, batched_matmul, batched_plan

__all__ = ["cache", "checks", "launch", "operands", "AUTO", "check_out", "resolve", "array_matmul", "gpu_memory_message",
           "host_launch", "overlaps", "AddendFacts", "Facts", "addend_facts", "devices_differ", "facts",
           "out_dtype_name", "scale_facts", "MAX_PLANS", "Prepared", "launchers", "plans", "remember",
           "remember_launcher", "batched", "Batch", "batch_of",
           "batched_matmul", "batched_plan"]
