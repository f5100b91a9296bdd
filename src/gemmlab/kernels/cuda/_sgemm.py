"""Shared pieces of the FP32 ladder's specs (v3 and up): launch geometry and the checks every level makes.

Each level's own constraints live in its module; these are the limits of the hardware and of the shared
device helpers in sgemm_common.cuh, phrased as the reason a configuration is rejected.
"""
from __future__ import annotations

from gemmlab.kernels.cuda._kernel import Geometry, ceil_div
from gemmlab.kernels.spec import tiled_traffic

STATIC_SMEM_LIMIT = 48 * 1024  # a block's static __shared__ arrays
DYNAMIC_SMEM_LIMIT = 227 * 1024  # sm_90 opt-in maximum per block
SM_SMEM = 228 * 1024  # shared memory per SM, shared by the resident blocks
SM_REGISTERS = 65536


def block_tile_grid(threads_of):
    """Geometry of the levels that launch a 2D grid of BM×BN block tiles: x over N, y over M."""

    def geometry(problem, p):
        return Geometry(grid=(ceil_div(problem.n, p["BN"]), ceil_div(problem.m, p["BM"]), 1),
                        block=(threads_of(p), 1, 1))

    return geometry


def thread_errors(threads: int) -> list[str]:
    errors = []
    if threads > 1024:
        errors.append(f"{threads} threads per block, past the 1024 limit")
    if threads % 32:
        errors.append(f"{threads} threads per block is not a whole number of warps")
    return errors


def divides(errors: list[str], a: int, b: int, what: str) -> None:
    """Append '<what>: a does not divide b' when it does not."""
    if a <= 0 or b % a:
        errors.append(f"{what}: {a} does not divide {b}")


def traffic_of(p):
    return lambda problem: tiled_traffic(problem, p["BM"], p["BN"])


def scalar_staging_errors(p: dict, threads_of, divisors: list[tuple[str, str]]) -> list[str]:
    """v3 and v4: each (tile, dim) must divide its block dimension, the staging loops split the A and B tiles
    evenly over the threads, and both tiles fit the static shared-memory limit."""
    errors = []
    for tile, dim in divisors:
        divides(errors, p[tile], p[dim], f"{tile} must divide {dim}")
    if errors:
        return errors
    threads = threads_of(p)
    errors += thread_errors(threads)
    divides(errors, threads, p["BM"] * p["BK"], "threads must split the A tile evenly")
    divides(errors, threads, p["BK"] * p["BN"], "threads must split the B tile evenly")
    if 4 * p["BK"] * (p["BM"] + p["BN"]) > STATIC_SMEM_LIMIT:
        errors.append("the A and B tiles exceed 48 KiB of static shared memory")
    return errors


def staged_quads_errors(p: dict, threads: int) -> list[str]:
    """sgemm_common's 128-bit staging (v5 to v7): the A and B tiles split into quads, evenly over threads."""
    errors = thread_errors(threads)
    divides(errors, 4, p["BK"], "BK must be a multiple of 4 (A is staged in quads along k)")
    divides(errors, 4, p["BN"], "BN must be a multiple of 4 (B is staged in quads along n)")
    if not errors:
        divides(errors, threads, p["BM"] * p["BK"] // 4, "threads must split the A tile's quads evenly")
        divides(errors, threads, p["BK"] * p["BN"] // 4, "threads must split the B tile's quads evenly")
    smem = 4 * p["BK"] * (p["BM"] + 4 + p["BN"])
    if smem > STATIC_SMEM_LIMIT:
        errors.append(f"the A and B tiles need {smem} bytes of static shared memory, past 48 KiB")
    return errors
