// row_norm_launch.inl: the host side of the row-norm engines, shared like row_norm_kernels.inl
// (which must come first): size the grid and launch, pick 16-byte or scalar accesses, and run
// one validated op call on the tensors' device. Each engine defines before including it:
//   KH_RN_API(name)          its runtime's name for `name`: cuda##name or hip##name (Error_t,
//                            Stream_t, Success, ErrorInvalidValue, GetDevice, SetDevice, ...)
//   unit_count(dev, &n)      SMs / CUs of a device
//   clamp_grid<NT>(blocks)   blocks, bounded by what the runtime accepts for NT threads a block
//   device_status(e), kDeviceErrorFormat  the status and message (device, error string, error
//                            name) an op call's runtime error becomes
// and after it launch_for_width<K, T, VEC, FUSED>, its ladder of kernel configurations (the
// register budgets differ: CUDA caps registers per thread, gfx942 has wavefronts of 64).
#if !defined(KH_RN_API)
#error "row_norm_launch.inl is included by row_norm_engine.cuh or row_norm_engine_hip.hpp"
#endif

namespace kh_row_norm {

using GpuError = KH_RN_API(Error_t);
using GpuStream = KH_RN_API(Stream_t);

// ---- host side: pick a kernel, size the grid, launch ------------------------------------------

// Blocks of `Kernel` resident on one SM / CU times their count, cached per device (it cannot
// change).
template <auto Kernel, int NT>
GpuError resident_ctas(int device, int* out) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cache[kMaxDevices];
  if (device >= 0 && device < kMaxDevices) {
    const int c = cache[device].load(std::memory_order_relaxed);
    if (c > 0) {
      *out = c;
      return KH_RN_API(Success);
    }
  }
  int units = 0, per_unit = 0;
  GpuError e = unit_count(device, &units);
  if (e != KH_RN_API(Success)) return e;
  e = KH_RN_API(OccupancyMaxActiveBlocksPerMultiprocessor)(&per_unit, Kernel, NT, 0);
  if (e != KH_RN_API(Success)) return e;
  *out = std::max(1, per_unit) * units;
  if (device >= 0 && device < kMaxDevices) cache[device].store(*out, std::memory_order_relaxed);
  return KH_RN_API(Success);
}

// A block per row group while that is at most this many waves of resident blocks, so the
// hardware hands rows to SMs as they free up. A persistent grid that walked the rows itself
// ran in lock step and left its last partial wave alone: rms_norm bf16 32768x4096 went from
// 0.87x to 0.97x of copy bandwidth on the H200 without it. Beyond, blocks loop over rows.
constexpr int kMaxGridWaves = 64;

template <auto Kernel, int NT, int ROWS_PER_CTA>
GpuError launch_rows(const RowNormArgs& a, GpuStream stream) {
  int device = 0, resident = 0;
  GpuError e = KH_RN_API(GetDevice)(&device);
  if (e == KH_RN_API(Success)) e = resident_ctas<Kernel, NT>(device, &resident);
  if (e != KH_RN_API(Success)) return e;
  const int64_t needed = (a.rows + ROWS_PER_CTA - 1) / ROWS_PER_CTA;
  const unsigned grid =
      static_cast<unsigned>(std::min<int64_t>(needed, clamp_grid<NT>(int64_t(resident) * kMaxGridWaves)));
  Kernel<<<grid, NT, 0, stream>>>(a);
  return KH_RN_API(GetLastError)();
}

template <NormKind K, typename T, int VEC, int NT, int ROW_THREADS, int ITEMS, bool FUSED>
GpuError launch_registers(const RowNormArgs& a, GpuStream s) {
  return launch_rows<row_norm_registers<K, T, VEC, NT, ROW_THREADS, ITEMS, FUSED>, NT,
                     NT / ROW_THREADS>(a, s);
}

// Threads per block for huge rows: the most a block may have, so that each step of a pass
// moves NT * stream_unroll() * 16 B (16-32 KB) of one row.
constexpr int kStreamThreads = kMaxBlockThreads;

// Picks the smallest configuration whose registers hold the row (the engine's ladder,
// defined after this file). Capacities are in packs (VEC elements) per row; the tail
// (< VEC elements) rides along as one scalar per thread.
template <NormKind K, typename T, int VEC, bool FUSED>
GpuError launch_for_width(const RowNormArgs& a, GpuStream s);

// In-row offsets are 32-bit; 2^30 leaves headroom for the last step of a pass.
constexpr int64_t kMaxHidden = int64_t(1) << 30;

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// True when every row of a tensor laid out as `l` starts 16-byte aligned, given a base that is.
inline bool rows_aligned(const kh_kernels::RowLayout& l, int vec) {
  for (int32_t d = 0; d < l.ndim; ++d)
    if (l.stride[d] % vec != 0) return false;
  return true;
}

// Entry for one (kind, dtype, fused): 16-byte packs when every row of every tensor starts
// 16-byte aligned (weight and bias too, read as packs), else scalar accesses.
template <NormKind K, typename T, bool FUSED>
GpuError launch_row_norm(const RowNormArgs& a, GpuStream s) {
  if (a.rows <= 0 || a.hidden <= 0) return KH_RN_API(Success);
  if (a.hidden > kMaxHidden) return KH_RN_API(ErrorInvalidValue);
  if (a.rows > INT32_MAX && !(a.x_rows.uniform() && a.out_rows.uniform() && a.residual_rows.uniform() &&
                              a.residual_out_rows.uniform()))
    return KH_RN_API(ErrorInvalidValue);
  constexpr int kVec = 16 / sizeof(T);
  bool vec = aligned16(a.x) && aligned16(a.out) && rows_aligned(a.x_rows, kVec) && rows_aligned(a.out_rows, kVec);
  if constexpr (FUSED) {
    vec = vec && aligned16(a.residual) && aligned16(a.residual_out) && rows_aligned(a.residual_rows, kVec) &&
          rows_aligned(a.residual_out_rows, kVec);
  }
  vec = vec && (a.weight_kind == ParamKind::kNone || aligned16(a.weight)) &&
        (K == NormKind::kRms || a.bias_kind == ParamKind::kNone || aligned16(a.bias));
  if (vec) return launch_for_width<K, T, kVec, FUSED>(a, s);
  return launch_for_width<K, T, 1, FUSED>(a, s);
}

template <NormKind K, typename T>
GpuError launch_row_norm(const RowNormArgs& a, bool fused, GpuStream s) {
  return fused ? launch_row_norm<K, T, true>(a, s) : launch_row_norm<K, T, false>(a, s);
}

// ---- host side: from validated op arguments to a launch ------------------------------------

inline ParamKind param_kind(kh_kernels::DType param, kh_kernels::DType input) {
  if (param == kh_kernels::DType::kUnknown) return ParamKind::kNone;
  return param == kh_kernels::DType::kF32 ? ParamKind::kF32 : (param == input ? ParamKind::kSameAsInput : ParamKind::kNone);
}

inline RowNormArgs make_row_norm_args(const kh_kernels::NormParams& p) {
  RowNormArgs a{};
  a.out = p.out;
  a.residual_out = p.residual_out;
  a.x = p.x;
  a.residual = p.residual;
  a.weight = p.weight;
  a.bias = p.bias;
  a.out_rows = p.out_rows;
  a.residual_out_rows = p.residual_out_rows;
  a.x_rows = p.x_rows;
  a.residual_rows = p.residual_rows;
  a.rows = p.rows;
  a.hidden = p.hidden;
  a.eps = static_cast<float>(p.eps);
  a.weight_kind = p.weight != nullptr ? param_kind(p.weight_dtype, p.dtype) : ParamKind::kNone;
  a.bias_kind = p.bias != nullptr ? param_kind(p.bias_dtype, p.dtype) : ParamKind::kNone;
  return a;
}

// The per-dtype launchers of one package, each defined in its own translation unit.
struct RowNormLaunchers {
  GpuError (*f32)(const RowNormArgs&, bool fused, GpuStream);
  GpuError (*f16)(const RowNormArgs&, bool fused, GpuStream);
  GpuError (*bf16)(const RowNormArgs&, bool fused, GpuStream);
};

// Runs one validated norm call on the tensors' device and the caller's stream (NULL: the
// default stream). A runtime error becomes the engine's device_status and kDeviceErrorFormat.
inline kh_status run_row_norm(const kh_kernels::OpContext& c, const kh_kernels::NormParams& p,
                              const RowNormLaunchers& launchers) {
  if (p.rows == 0) return KH_OK;
  if (p.hidden > kMaxHidden)
    return kh_kernels::op_error(c, KH_ERROR_UNSUPPORTED, "hidden size %lld is over this kernel's limit of %lld",
                               (long long)p.hidden, (long long)kMaxHidden);
  if (p.rows > INT32_MAX && !(p.x_rows.uniform() && p.out_rows.uniform() && p.residual_rows.uniform() &&
                              p.residual_out_rows.uniform()))
    return kh_kernels::op_error(c, KH_ERROR_UNSUPPORTED,
                               "%lld rows whose leading dimensions are not evenly spaced; this kernel takes "
                               "at most 2^31 - 1 such rows (make the tensors contiguous)", (long long)p.rows);
  GpuError (*launch)(const RowNormArgs&, bool, GpuStream) = nullptr;
  switch (p.dtype) {
    case kh_kernels::DType::kF32: launch = launchers.f32; break;
    case kh_kernels::DType::kF16: launch = launchers.f16; break;
    case kh_kernels::DType::kBF16: launch = launchers.bf16; break;
    default:
      return kh_kernels::op_error(c, KH_ERROR_UNSUPPORTED, "dtype %s is not supported", kh_kernels::dtype_name(p.dtype));
  }
  const bool has_stream = c.ctx != nullptr && c.ctx->struct_size >= offsetof(kh_call_ctx, stream) + sizeof(void*);
  GpuStream stream = has_stream ? static_cast<GpuStream>(c.ctx->stream) : nullptr;

  // Launch on the tensors' device; give the caller back the device it had.
  int previous = -1;
  GpuError e = KH_RN_API(GetDevice)(&previous);
  if (e == KH_RN_API(Success) && previous != p.device.device_id) e = KH_RN_API(SetDevice)(p.device.device_id);
  if (e == KH_RN_API(Success)) e = launch(make_row_norm_args(p), p.fused, stream);
  if (previous >= 0 && previous != p.device.device_id) (void)KH_RN_API(SetDevice)(previous);
  if (e != KH_RN_API(Success))
    return kh_kernels::op_error(c, device_status(e), kDeviceErrorFormat, p.device.device_id,
                                KH_RN_API(GetErrorString)(e), KH_RN_API(GetErrorName)(e));
  return KH_OK;
}

}  // namespace kh_row_norm
