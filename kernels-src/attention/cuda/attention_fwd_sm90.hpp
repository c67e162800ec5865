// attention_fwd_sm90.hpp: the host-side interface of the sm90a (wgmma + TMA) attention forward,
// the kernel of attention_fwd and attention_varlen_fwd on the sm90a build, and its tile table
// (the host builds the TMA boxes from it, the kernel its tiles).
//
// Built only for the cuda*-sm90a variant (the translation units need -arch sm_90a). Every
// head-dim bucket (attention_fwd_buckets.hpp); the op entry sends calls whose tensors TMA cannot
// describe to the sm80 kernel, which the sm90a variant also carries.
#pragma once

#include <cuda.h>  // CUtensorMap (a plain struct; no driver library is linked)
#include <cuda_runtime_api.h>

#include "attention_fwd_launch.hpp"

namespace kh_attention::sm90 {

// The widest shared-memory swizzle (TMA box and wgmma layout, 128, 64 or 32 bytes a row) that
// divides a row of `bytes`: for 16-bit head dims, 64-column boxes for 64/128/192/256, 32-column
// boxes for 96, 16-column ones for 80. wgmma's N-major operands (V) need N to be a whole number
// of swizzle rows; K-major ones (Q, K) take any 32-byte k-step.
constexpr int sm90_swizzle_for_bytes(int bytes) { return bytes % 128 == 0 ? 128 : bytes % 64 == 0 ? 64 : 32; }
constexpr int sm90_swizzle_bytes(int dim) { return sm90_swizzle_for_bytes(dim * 2); }

// Tiles per bucket (kQKDim, kVDim: the head dims S = QK^T and O = PV run over; kElemBytes: 2 for
// bf16/fp16 operands, 1 for the FP8 prefill's e4m3). wgmma's M is 64 per consumer warpgroup;
// each thread holds S of a key block (kBlockN / 2 fp32 registers), P of the previous one as A
// fragments (kBlockN / 4, or kBlockN / 8 in e4m3) and O (kVDim / 2) at once:
//  - d <= 96: three consumer warpgroups (192 query rows; setmaxnreg 160): the softmax, which
//    weighs more against the products at small d, has two other warpgroups' products to hide
//    under (+31-36% at d = 64 against two). S + P + O: 128 registers at d = 64 (128-key
//    blocks), 124 at 80 (112 keys), 120 at 96 (96 keys); at 128 keys d = 80 and 96 spilled
//    32-48 bytes a thread of the 160 (and 136 / 144 would leave no room for the softmax).
//    Three K/V stages (a block's products take about one TMA load's latency at small d).
//  - d 128-256: two consumer warpgroups (128 rows; setmaxnreg 240), two stages. Key blocks of
//    128 at d = 128, 112 at 192 (FlashAttention-3's choice: two 112-key K and V stages and Q
//    fill 216 KB), 80 at 256 (224 KB).
//  - O is staged in shared memory for 16-byte stores where there is room (v head dim <= 128);
//    192 and 256 store from registers (4 bytes a lane, a quad's 16 bytes contiguous).
// Shared memory (227 KB a CTA): d64 145 KB, d80 167 KB, d96 181 KB, d128 193 KB, d192 217 KB,
// d192/128 221 KB, d256 225 KB.
// FP8 (buckets 64, 128, 256 with kQKDim == kVDim): FP8 wgmma takes V only K-major, so V is
// loaded as K is (swizzled boxes of kSwizzleV bytes) and the producer warpgroup's three spare
// warps write it transposed into a ring of Vt stages ([key boxes][kVDim rows][kSwizzleVt bytes
// of keys]); the producers keep 56 registers for that (consumers 224 with two warpgroups, 152
// with three). Key blocks are whole k-steps of 32: 128 at d = 64; 192 at d = 128 (+10% over 128
// on the H100: fewer, longer steps for the same barriers and waits; S + P + O 184 registers).
// d = 256 takes 128-key blocks (FlashAttention-3's FP8 tile there), whose S + P + O hold 208
// registers: the consumers need all 240 (at 232 they spill 48 bytes a thread), so the producers
// keep 24, and the transposers spill (88-144 bytes), in the code of calls without a workspace only.
// With the caller's workspace (the pre-pass transposes V) that is +15-20% over the 64-key blocks
// and their 56 / 224 split (H100, b2 s8k 992 -> 1161 TF/s full, 903 -> 1038 causal, s16k 1060 ->
// 1226); without one, -5 to -7% (904 -> 860 full). Rings: K 2, V 2 half-block pieces, Vt 2 (192
// KB, so the varlen lists keep their room); two whole V stages (224 KB) took the workspace-less
// calls back to 904-925 TF/s, but would leave room for only 480 causal list items (cuda/NOTES.md).
template <int kQKDim, int kVDim, int kElemBytes = 2>
struct Sm90TileConfig {
  static constexpr bool kFp8 = kElemBytes == 1;
  static_assert(kQKDim % 16 == 0 && kVDim % 16 == 0 && kVDim <= kQKDim, "bad bucket");
  static_assert(!kFp8 || (kQKDim == kVDim && (kQKDim == 64 || kQKDim == 128 || kQKDim == 256)), "bad FP8 bucket");
  static constexpr int kConsumerWarpgroups = kQKDim <= 96 ? 3 : 2;
  static constexpr int kConsumerWarps = kConsumerWarpgroups * 4;
  static constexpr int kThreads = (kConsumerWarpgroups + 1) * 128;  // + one producer warpgroup
  static constexpr int kBlockM = 64 * kConsumerWarpgroups;
  static constexpr int kBlockN = kFp8 ? (kQKDim == 128 ? 192 : 128)
                                 : kQKDim <= 64  ? 128
                                 : kQKDim <= 80  ? 112
                                 : kQKDim <= 96  ? 96
                                 : kQKDim <= 128 ? 128
                                 : kQKDim <= 192 ? 112
                                                 : 80;
  static constexpr int kStages = kQKDim <= 96 ? 3 : 2;  // of K and V (16-bit operands)
  // FP8: K and V as loaded in rings of four (a block's products take half the time of 16-bit
  // ones, so the loads need more blocks of lead), Vt in a ring of three; d = 128's 192-key
  // blocks fill shared memory with three K, two V and two Vt stages (216 KB with Q and O).
  // d = 256's 128-key blocks (32 KB a block): K 2, Vt 2, and V (as loaded, for the transposers)
  // in pieces of half a block, two of them: one block's room, but the transposers take a piece
  // while the next one loads (H100, without a workspace: d256 s8k full 811 -> 860 TF/s against a
  // whole-block V stage, causal 793 -> 828, s16k 833 -> 866; 904, 875, 932 with 64-key blocks).
  static constexpr bool kFp8Wide = kFp8 && kQKDim == 256;
  static constexpr int kVSplit = kFp8Wide ? 2 : 1;  // V stages (pieces) a key block
  static constexpr int kVKeys = kBlockN / kVSplit;  // keys a V stage holds
  static constexpr int kStagesK = kFp8Wide ? 2 : kFp8 ? (kBlockN > 128 ? 3 : 4) : kStages;
  static constexpr int kStagesV = kFp8Wide ? 2 : kFp8 ? (kBlockN > 128 ? 2 : 4) : kStages;
  static constexpr int kStagesVt = kFp8Wide ? 2 : kFp8 ? (kBlockN > 128 ? 2 : 3) : 0;
  static constexpr bool kStageO = kVDim <= 128;
  static constexpr int kSwizzleQK = sm90_swizzle_for_bytes(kQKDim * kElemBytes);  // of the Q and K tiles
  static constexpr int kSwizzleV = sm90_swizzle_for_bytes(kVDim * kElemBytes);  // of the V tiles
  static constexpr int kSwizzleVt = sm90_swizzle_for_bytes(kBlockN);      // FP8: of the Vt tiles
  static constexpr int kVtBoxBytes = kVDim * kSwizzleVt;  // FP8: the stride of a stage's Vt boxes
  static constexpr int kSwizzleO = sm90_swizzle_bytes(kVDim);             // of the O staging tile (16-bit out)
  static constexpr int kTransposeWarps = 3;  // FP8: the producer warpgroup's warps but the TMA one
  static constexpr int kVDimBytes = kVDim * kElemBytes;
  // Registers per thread after setmaxnreg: the producer warpgroup gives its share to the
  // consumers (128 x 24 + 256 x 240 <= 65536; 128 x 24 + 384 x 160 with three consumers).
  // At entry every thread is capped at 65536 / kThreads (168, or 128 with three consumers).
  // FP8 keeps 56 for the transposers (consumers 224 or 152), but for d = 256's blocks (above).
  // d = 128 at 24 / 240 (the transposers spilling) lost 1.5-3.7% without the workspace and tied
  // with it (cuda/NOTES.md "The register split 24 / 240 at d128").
  static constexpr bool kFp8Transposers = kFp8 && !kFp8Wide;
  static constexpr int kProducerRegs = kFp8Transposers ? 56 : 24;
  static constexpr int kConsumerRegs = kConsumerWarpgroups == 2 ? (kFp8Transposers ? 224 : 240)
                                                                : (kFp8Transposers ? 152 : 160);
  static_assert(128 * kProducerRegs + 128 * kConsumerWarpgroups * kConsumerRegs <= 65536, "over the register file");

  // Shared-memory byte offsets from the 1024-aligned base (every tile a whole number of 1024-byte
  // swizzle atoms): Q, K and V stages, (FP8) Vt stages, the O staging tile, the mbarriers.
  // kKBytes / kVBytes / kVtBytes: what one stage's TMA boxes bring (the mbarrier's transaction
  // count); kKStage / kVStage / kVtStage: the stage stride, rounded up to 1024 bytes so that every
  // box starts on a whole swizzle pattern (a 112 x 80 K tile is 17.5 KB).
  static constexpr int kQBytes = kBlockM * kQKDim * kElemBytes;
  static constexpr int kKBytes = kBlockN * kQKDim * kElemBytes;
  static constexpr int kVBytes = kVKeys * kVDim * kElemBytes;
  static constexpr int kVtBytes = kFp8 ? kBlockN * kVDim * kElemBytes : 0;
  static constexpr int kKStage = (kKBytes + 1023) / 1024 * 1024;
  static constexpr int kVStage = (kVBytes + 1023) / 1024 * 1024;
  static constexpr int kVtStage = kFp8 ? (kBlockN * kVDim + 1023) / 1024 * 1024 : 0;  // e4m3: a byte an element
  static constexpr int kOBytes = kStageO ? kBlockM * kVDim * 2 : 0;
  static constexpr int kKOffset = kQBytes;
  static constexpr int kVOffset = kKOffset + kStagesK * kKStage;
  static constexpr int kVtOffset = kVOffset + kStagesV * kVStage;
  static constexpr int kOOffset = kVtOffset + kStagesVt * kVtStage;
  static constexpr int kBarOffset = kOOffset + kOBytes;
  // q_full, full_k[], full_v[], empty_k[], empty_v[], q_empty, then the pair ring's (16-bit
  // operands) or (FP8) vt_full[] and vt_empty[].
  static constexpr int kBarriers = kFp8 ? 2 + 2 * (kStagesK + kStagesV + kStagesVt) : 16;
  static constexpr int kSmemBytes = kBarOffset + kBarriers * 8 + 1024;  // + slack to align the base
  static_assert(kQBytes % 1024 == 0 && kOBytes % 1024 == 0, "tiles of whole swizzle patterns");
  static_assert(kSmemBytes <= 227 * 1024, "over the sm90 shared-memory limit per CTA");

  // attention_varlen_fwd on the persistent grid (attention_varlen_schedule.hpp): the tile list
  // after the barriers, first_tile[batch + 1] then seq_of_rank[batch] (int32), in launches of
  // that path only. Up to kSchedSeqs sequences: 512 (building the list costs O(batch^2 /
  // threads) a CTA, ~1-3 us at 512), fewer where shared memory is short (d = 256: 224); calls
  // with more sequences run one CTA per tile. While the list is built, the sequences' keys and
  // tile counts sit in the Q tile (free until the first Q load).
  static constexpr int kSchedOffset = kBarOffset + kBarriers * 8;
  static constexpr int kSchedRoom = 227 * 1024 - kSmemBytes;
  static constexpr int kSchedSeqs = (kSchedRoom - 4) / 8 / 32 * 32 < 512 ? (kSchedRoom - 4) / 8 / 32 * 32 : 512;
  static constexpr int sched_bytes(int batch) { return (2 * batch + 1) * 4; }
  // Causal varlen lists: the item count, then up to kSchedItems items (sequence, tile), each
  // placed in O(batch) by the CTA's threads: calls with items x batch above kSchedWork (2^17:
  // ~350 rank steps a thread at 384 threads, ~2 us) run one CTA per tile.
  static constexpr int kSchedItems = (kSchedRoom - 4) / 4 / 32 * 32 < 4096 ? (kSchedRoom - 4) / 4 / 32 * 32 : 4096;
  static constexpr int64_t kSchedWork = int64_t(1) << 17;
  static constexpr int causal_sched_bytes(int items) { return (items + 1) * 4; }
  // Causal pair lists (attention_varlen_schedule.hpp, "Causal pair lists"): the list of the
  // sequences as above, the first tail rank, then the dealing's state, kept while the kernel
  // runs: every CTA's work, one round's slot costs and its slots by cost rank (grid each), and
  // a ring of kPairRing rounds' slots of this CTA. The ring's mbarriers follow the kernel's
  // others (a full and an empty one an entry).
  static constexpr int kPairRing = 3;
  static constexpr int64_t pair_sched_bytes(int64_t batch, int64_t grid) { return (2 * batch + 2 + 3 * grid + kPairRing) * 4; }
  // The dealing's state sits in one thread's registers for up to two CTAs of the grid.
  static constexpr int kPairSimThreads = 96;
  static constexpr int kPairMaxGrid = 2 * kPairSimThreads;
  static_assert(kSchedSeqs >= 32 && 3 * kSchedSeqs * 4 <= kQBytes, "no room for the varlen lists' scratch");
};

// Where a 4-D tensor map puts the row, head and batch dims (1..3; dim 0 is head_dim): the
// host orders them by stride, smallest first, as TMA expects of a tensor's dims.
struct TmaDimOrder {
  int row = 2, head = 1, batch = 3;
};

// The tensor maps of one call (TMA loads of q, k and v tiles, swizzled per Sm90TileConfig).
struct FwdTensorMaps {
  CUtensorMap q, k, v;
  CUtensorMap vt;  // FP8 with a workspace: V transposed there (attention_fp8_vt.hpp); else unused
  TmaDimOrder q_order, k_order, v_order;
};

// Launches on `stream`. cudaErrorNotSupported: this call cannot take the sm90a path (tensor
// maps the driver refused): run the sm80 kernel instead.
cudaError_t run_attention_fwd_sm90(const FwdLaunchParams& p, cudaStream_t stream);

// FP8 prefill with a workspace (p.vt, p.vt_col0, p.vt_columns set): the pre-pass that writes V
// transposed there (attention_fp8_vt.cu), launched on `stream` before the prefill kernel.
cudaError_t launch_fp8_vt_prepass(const FwdLaunchParams& p, cudaStream_t stream);

// The driver's cuTensorMapEncodeTiled (through the runtime's entry-point query, so that the
// library links no libcuda), or null where the driver lacks it. Shared with the decode op's TMA
// ring (attention_decode_cuda.cu).
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
EncodeTiledFn encode_tiled();

// The current device's SM count (a persistent grid's size), cached per device.
int sm90_sm_count();

// Whether attention_varlen_fwd may run on the persistent grid (full attention, up to
// Sm90TileConfig::kSchedSeqs sequences): yes (a development build's
// KH_ATTENTION_VARLEN_PERSISTENT=0 makes it one CTA per tile, the path of 1.1.0, for comparisons;
// read at each such call, so that one process can time both: attention_experiments.hpp).
bool sm90_varlen_persistent();

// Whether causal attention_varlen_fwd calls of the two-warpgroup buckets (d >= 128) may take the
// pair list (attention_varlen_schedule.hpp, "Causal pair lists"): yes (a development build's
// KH_ATTENTION_VARLEN_PAIRS=0 keeps the list of tiles by cost, for comparisons; read at each such
// call, as above).
bool sm90_varlen_pair_list();

// One per translation unit; causal is chosen inside.
template <int kQKDim, int kVDim, ElementType kType>
cudaError_t run_attention_fwd_sm90_instance(const FwdLaunchParams& p, const FwdTensorMaps& maps,
                                            cudaStream_t stream);

// FP8 prefill (p.fp8: attention_varlen_fwd_fp8 with an e4m3 q, k and v): the same kernel on FP8
// wgmma, buckets 64, 128 and 256 (head dims 32-64, 80-128, 144-256 in steps of 16 round up to
// them). cudaErrorNotSupported: tensor maps the driver refused (the op refuses the call).
cudaError_t run_attention_fwd_sm90_fp8(const FwdLaunchParams& p, cudaStream_t stream);

template <int kDim, ElementType kOutType>
cudaError_t run_attention_fwd_sm90_fp8_instance(const FwdLaunchParams& p, const FwdTensorMaps& maps,
                                                cudaStream_t stream);

}  // namespace kh_attention::sm90
