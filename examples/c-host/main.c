/* A C host: loads a kernel package through kh_load_kernel(), calls its rms_norm on random
 * data and checks the result against its own loop. kh picks the build for this machine;
 * when it picked a CUDA build the tensors go to GPU 0 through the CUDA Driver API
 * (cuda_device.c, reached with dlopen), else they stay in host memory for a CPU build.
 * Usage: c_host [org/name@version]   (hub from $KH_HUB, cache from $KH_CACHE) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <kh/kh.h>

#include "cuda_device.h"

enum { ROWS = 64, HIDDEN = 1024 };
static const double kEps = 1e-6;

static float random_value(void) { return (float)rand() / (float)RAND_MAX * 4.0f - 2.0f; }

/* rms_norm(out, x, weight, eps) on tensors that live on `device`. */
static kh_status call_rms_norm(const kh_op* op, void* out, void* x, void* weight, DLDevice device) {
  int64_t x_shape[2] = {ROWS, HIDDEN}, w_shape[1] = {HIDDEN};
  DLTensor tout = {out, device, 2, {kDLFloat, 32, 1}, x_shape, NULL, 0};
  DLTensor tx = {x, device, 2, {kDLFloat, 32, 1}, x_shape, NULL, 0};
  DLTensor tw = {weight, device, 1, {kDLFloat, 32, 1}, w_shape, NULL, 0};
  kh_value args[4];
  args[0].kind = KH_VALUE_TENSOR;
  args[0].u.tensor = &tout;
  args[1].kind = KH_VALUE_TENSOR;
  args[1].u.tensor = &tx;
  args[2].kind = KH_VALUE_TENSOR;
  args[2].u.tensor = &tw;
  args[3].kind = KH_VALUE_DOUBLE;
  args[3].u.d = kEps;
  return kh_op_call(op, args, 4, NULL); /* NULL: the default stream, for a GPU build */
}

/* Copies x and weight to GPU 0, runs the op there, copies out back. 0 on success; on
 * failure prints why. *device_name is set for the report. */
static int run_on_cuda(const kh_op* op, float* out, const float* x, const float* weight, char* device_name,
                       size_t name_len) {
  char err[256];
  cuda_device* dev = cuda_device_open(err, sizeof err);
  if (dev == NULL) {
    fprintf(stderr, "c_host: kh chose a CUDA build but the GPU is not usable: %s\n", err);
    return 1;
  }
  snprintf(device_name, name_len, "GPU 0, %s", cuda_device_name(dev));
  const size_t x_bytes = sizeof(float) * ROWS * HIDDEN, w_bytes = sizeof(float) * HIDDEN;
  uint64_t d_out = 0, d_x = 0, d_w = 0;
  int rc = 1;
  if (cuda_device_alloc(dev, x_bytes, &d_out, err, sizeof err) != 0 ||
      cuda_device_alloc(dev, x_bytes, &d_x, err, sizeof err) != 0 ||
      cuda_device_alloc(dev, w_bytes, &d_w, err, sizeof err) != 0 ||
      cuda_device_upload(dev, d_out, out, x_bytes, err, sizeof err) != 0 || /* the NaNs: unwritten shows */
      cuda_device_upload(dev, d_x, x, x_bytes, err, sizeof err) != 0 ||
      cuda_device_upload(dev, d_w, weight, w_bytes, err, sizeof err) != 0) {
    fprintf(stderr, "c_host: %s\n", err);
    goto done;
  }
  const DLDevice gpu0 = {kDLCUDA, 0};
  if (call_rms_norm(op, (void*)(uintptr_t)d_out, (void*)(uintptr_t)d_x, (void*)(uintptr_t)d_w, gpu0) != KH_OK) {
    fprintf(stderr, "c_host: rms_norm failed: %s\n", kh_last_error());
    goto done;
  }
  if (cuda_device_sync(dev, err, sizeof err) != 0 || cuda_device_download(dev, out, d_out, x_bytes, err, sizeof err) != 0) {
    fprintf(stderr, "c_host: %s\n", err);
    goto done;
  }
  rc = 0;
done:
  cuda_device_free(dev, d_out);
  cuda_device_free(dev, d_x);
  cuda_device_free(dev, d_w);
  cuda_device_close(dev);
  return rc;
}

/* The largest absolute difference from a float64 reference; NaN if any output is NaN. */
static double max_error_vs_reference(const float* out, const float* x, const float* weight) {
  double max_error = 0.0;
  for (int r = 0; r < ROWS; ++r) {
    double sum_sq = 0.0;
    for (int c = 0; c < HIDDEN; ++c) sum_sq += (double)x[r * HIDDEN + c] * x[r * HIDDEN + c];
    const double inv_rms = 1.0 / sqrt(sum_sq / HIDDEN + kEps);
    for (int c = 0; c < HIDDEN; ++c) {
      const double want = x[r * HIDDEN + c] * inv_rms * weight[c];
      const double err = fabs((double)out[r * HIDDEN + c] - want);
      if (!(err <= max_error)) max_error = err; /* NaN propagates as a failure */
    }
  }
  return max_error;
}

int main(int argc, char** argv) {
  const char* spec = argc > 1 ? argv[1] : "kernels-community/rms-norm@1";
  kh_kernel* kernel = NULL;
  if (kh_load_kernel(spec, NULL, &kernel) != KH_OK) {
    fprintf(stderr, "c_host: cannot load %s: %s\n", spec, kh_last_error());
    return 1;
  }
  printf("loaded %s %s\n  variant: %s\n  cache path: %s\n", kh_kernel_name(kernel), kh_kernel_version(kernel),
         kh_kernel_variant(kernel), kh_kernel_path(kernel));

  const kh_op* op = NULL;
  if (kh_kernel_find_op(kernel, "rms_norm", &op) != KH_OK) {
    fprintf(stderr, "c_host: %s\n", kh_last_error());
    kh_kernel_release(kernel);
    return 1;
  }
  printf("  op: %s\n", kh_op_schema(op));

  static float x[ROWS * HIDDEN], out[ROWS * HIDDEN], weight[HIDDEN];
  srand(42);
  for (int i = 0; i < ROWS * HIDDEN; ++i) x[i] = random_value();
  for (int i = 0; i < HIDDEN; ++i) weight[i] = random_value();
  for (int i = 0; i < ROWS * HIDDEN; ++i) out[i] = NAN; /* any element left unwritten shows */

  /* Where the op runs is the build's device type: a CUDA build needs device pointers. */
  char device_name[200] = "the CPU";
  int failed;
  if (kh_kernel_device_type(kernel) == kDLCUDA) {
    failed = run_on_cuda(op, out, x, weight, device_name, sizeof device_name);
  } else {
    const DLDevice cpu = {kDLCPU, 0};
    failed = call_rms_norm(op, out, x, weight, cpu) != KH_OK;
    if (failed) fprintf(stderr, "c_host: rms_norm failed: %s\n", kh_last_error());
  }
  kh_kernel_release(kernel);
  if (failed) return 1;
  printf("  ran on: %s\n", device_name);

  const double max_error = max_error_vs_reference(out, x, weight);
  if (!(max_error < 1e-4)) {
    printf("rms_norm FAILED on %s (max abs error %.3g)\n", device_name, max_error);
    return 1;
  }
  printf("rms_norm ok (max abs error %.3g over %d x %d, on %s)\n", max_error, ROWS, HIDDEN, device_name);
  return 0;
}
