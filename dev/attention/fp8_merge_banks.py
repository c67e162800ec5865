#!/usr/bin/env python3
"""fp8_merge_banks.py: the CUDA FP8 decode kernel (attention_decode_fp8.cuh) ends each warp's key
loop by storing its O^T accumulators to the merge buffer, MergeSmem::acc[warp][row][dim]. Lane
(g, c) (g = lane / 4, c = lane % 4) holds, for each 16-dim block mb, accumulator w at row
2c + (w & 1), dim 16 mb + 2g + (w >> 1). This script checks, on the CPU, that the float2 stores
(w = 0 with 2 to row 2c, w = 1 with 3 to row 2c + 1) into rows padded by PAD floats put every value
where the scalar stores into unpadded rows did (the row and dim decode_epilogue reads), and counts
the shared-memory wavefronts a warp's stores take: a 4-byte store is one wavefront per distinct
address in its busiest bank; an 8-byte store is served a half-warp at a time, each half one
wavefront per distinct 8-byte word in its busiest bank pair. Exit status 1 on a misplaced value.

  python3 dev/attention/fp8_merge_banks.py
"""
import sys

ROW_FLOATS = 32 * 8  # MergeSmem<32, ...>: TPR * 8 floats a row before the padding
BANKS = 32


def wavefronts(addresses, width):
    """Wavefronts of one warp store: addresses in floats, one (or a pair, width 2) a lane."""
    halves = [addresses] if width == 1 else [addresses[:16], addresses[16:]]
    total = 0
    for lanes in halves:
        per_bank = {}
        for a in lanes:
            for k in range(width):
                per_bank.setdefault((a + k) % BANKS, set()).add((a + k) // BANKS if width == 1 else a // 2)
        total += max(len(v) for v in per_bank.values())
    return total


def placements(head_dim, pad, paired):
    """{(row, dim): (lane, mb, w)} for one warp, and its stores' wavefronts."""
    stride = ROW_FLOATS + pad
    where, waves = {}, 0
    for mb in range(head_dim // 16):
        stores = []
        if paired:
            for rows_of, ws in ((0, (0, 2)), (1, (1, 3))):
                addrs = []
                for lane in range(32):
                    g, c = lane // 4, lane % 4
                    row, dim = 2 * c + rows_of, 16 * mb + 2 * g
                    addrs.append(row * stride + dim)
                    for k, w in enumerate(ws):
                        where[(row, dim + k)] = (lane, mb, w)
                stores.append((addrs, 2))
        else:
            for w in range(4):
                addrs = []
                for lane in range(32):
                    g, c = lane // 4, lane % 4
                    row, dim = 2 * c + (w & 1), 16 * mb + 2 * g + (w >> 1)
                    addrs.append(row * stride + dim)
                    where[(row, dim)] = (lane, mb, w)
                stores.append((addrs, 1))
        for addrs, width in stores:
            if any(a % width for a in addrs):
                raise SystemExit(f"misaligned {4 * width}-byte store")
            waves += wavefronts(addrs, width)
    return where, waves


def main():
    failed = False
    for head_dim in (128, 256):
        old, old_waves = placements(head_dim, 0, paired=False)
        new, new_waves = placements(head_dim, 4, paired=True)
        _, unpadded_waves = placements(head_dim, 0, paired=True)
        same = old == new
        failed |= not same
        print(f"d{head_dim}: values {'in the same places' if same else 'MISPLACED'}; wavefronts a warp: "
              f"scalar, rows of {ROW_FLOATS} floats {old_waves}; float2, rows of {ROW_FLOATS} {unpadded_waves}, "
              f"of {ROW_FLOATS + 4} {new_waves}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
