#!/usr/bin/env python3
"""fp8_transposer_addresses.py: the FP8 prefill's V transposer (attention_fwd_sm90.cuh,
transpose_v_block) computes each lane's ldmatrix and stmatrix addresses from per-lane XOR terms,
items of up to four 32-column steps at a time, over V in pieces (a V stage holds a piece of a key
block: the whole block, or half of it at d256) written into their keys' columns of the block's Vt
stage. This script checks, on the CPU, that every lane of every step gets the same (load, store)
address pair as the per-step formula the GPU grid passed on (run 5 of cuda/NOTES.md, "FP8 prefill
on sm90a"), for every FP8 bucket's tile, with items of 4, 2 and 1 steps. Prints one line a tile;
exit status 1 on a mismatch.

  python3 dev/attention/fp8_transposer_addresses.py
"""
import sys

# (head dim = V row bytes, key block, keys a V stage holds): Sm90TileConfig<d, d, 1>'s kBlockN, kVKeys
TILES = ((64, 128, 128), (128, 192, 192), (256, 128, 64))


def swizzle_for(nbytes):
    return 128 if nbytes % 128 == 0 else 64 if nbytes % 64 == 0 else 32


def swizzled(row, chunk, width):
    return row * width + ((chunk ^ ((row * width >> 7) & (width // 16 - 1))) << 4)


def lane_rows(lane):
    m, j = lane >> 3, lane & 7
    return j + 8 * (m & 1), m >> 1, 2 * j + (m & 1) + 16 * (m >> 1)  # ld_key, ld_chunk, st_row


def per_step(d, keys, piece):
    """The addresses as the validated version computes them: both swizzles a step. The load side
    is within the V stage of the key's piece (piece keys a stage), the store side the block's Vt."""
    w_v, w_t, blocks = swizzle_for(d), swizzle_for(keys), d // 32
    out = {}
    for kg in range(keys // 16):
        for cb in range(blocks):
            for lane in range(32):
                ld_key, ld_chunk, st_row = lane_rows(lane)
                col, key, row, pos = 32 * cb + 16 * ld_chunk, 16 * kg + ld_key, 32 * cb + st_row, 16 * kg
                out[(kg, cb, lane)] = (key // piece,
                                       (col // w_v) * (piece * w_v) + swizzled(key % piece, (col % w_v) // 16, w_v),
                                       (pos // w_t) * (d * w_t) + swizzled(row, (pos % w_t) // 16, w_t))
    return out


def per_item(d, keys, piece, max_steps):
    """The addresses as transpose_v_block computes them: a call a piece (key0 its first key), XOR
    terms of the lane, items of up to max_steps steps."""
    w_v, w_t, blocks = swizzle_for(d), swizzle_for(keys), d // 32
    steps = min(blocks, max_steps)
    split = blocks // steps
    out = {}
    for h in range(keys // piece):
        key0 = h * piece
        for item in range((piece // 16) * split):
            kg, cb0 = item // split, (item % split) * steps
            for lane in range(32):
                ld_key, ld_chunk, st_row = lane_rows(lane)
                ld_xor = ((ld_key * w_v) >> 7) & (w_v // 16 - 1)
                st_xor = ((st_row * w_t) >> 7) & (w_t // 16 - 1)
                key, pos = 16 * kg + ld_key, 16 * kg
                vt_pos = key0 + pos
                vt_box = (vt_pos // w_t) * (d * w_t) + ((((vt_pos % w_t) // 16) ^ st_xor) << 4)
                for c in range(steps):
                    col = 32 * (cb0 + c) + 16 * ld_chunk
                    out[(key0 // 16 + kg, cb0 + c, lane)] = (h, (col // w_v) * (piece * w_v) + key * w_v +
                                                             ((((col % w_v) // 16) ^ ld_xor) << 4),
                                                             vt_box + (32 * (cb0 + c) + st_row) * w_t)
    return out


def main():
    bad = 0
    for d, keys, piece in TILES:
        want = per_step(d, keys, piece)
        for max_steps in (4, 2, 1):
            same = want == per_item(d, keys, piece, max_steps)
            bad += not same
            print(f"{'ok  ' if same else 'FAIL'} d{d} key block {keys} in pieces of {piece}, items of up to "
                  f"{max_steps} steps: every lane's (load, store) addresses "
                  f"{'match' if same else 'differ from'} the per-step formula")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
