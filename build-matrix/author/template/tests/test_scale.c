/* The package's own test: loads a built CPU library through kh, as a host does
 * (kh_load_kernel_library: ABI negotiation, the loader's argument checks), and checks scale
 * against a plain loop, in place and out of place, and that a bad call is refused.
 * Usage: test_scale <libkh_..._cpu.so>. CMakeLists.txt registers it with CTest; `kernels build`
 * runs it after each CPU build. */
#include <dlpack/dlpack.h>
#include <kh/kh.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { kN = 1000 };

static DLTensor f32_vector(float* data, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = 1;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

static kh_status call_scale(const kh_op* op, DLTensor* out, DLTensor* x, double alpha) {
  kh_value args[3];
  memset(args, 0, sizeof args);
  args[0].kind = KH_VALUE_TENSOR;
  args[0].u.tensor = out;
  args[1].kind = KH_VALUE_TENSOR;
  args[1].u.tensor = x;
  args[2].kind = KH_VALUE_DOUBLE;
  args[2].u.d = alpha;
  return kh_op_call(op, args, 3, NULL);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <built kernel library>\n", argv[0]);
    return 2;
  }
  kh_kernel* kernel = NULL;
  if (kh_load_kernel_library(argv[1], &kernel) != KH_OK) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], kh_last_error());
    return 1;
  }
  if (kh_kernel_device_type(kernel) != kDLCPU) {
    printf("SKIP: %s is a GPU build; this test runs CPU builds\n", kh_kernel_variant(kernel));
    kh_kernel_release(kernel);
    return 77;
  }
  const kh_op* op = NULL;
  if (kh_kernel_find_op(kernel, "scale", &op) != KH_OK) {
    fprintf(stderr, "no op scale: %s\n", kh_last_error());
    return 1;
  }

  static float x[kN], out[kN], expected[kN];
  const float alpha = -2.5f;
  for (int i = 0; i < kN; ++i) {
    x[i] = (float)((i * 37) % 101) / 7.0f - 3.0f;
    expected[i] = alpha * x[i];
  }
  int64_t shape[1] = {kN};
  DLTensor tx = f32_vector(x, shape), tout = f32_vector(out, shape);
  int failures = 0;
  if (call_scale(op, &tout, &tx, alpha) != KH_OK) {
    fprintf(stderr, "scale failed: %s\n", kh_last_error());
    return 1;
  }
  for (int i = 0; i < kN; ++i)
    if (out[i] != expected[i] && ++failures <= 5) fprintf(stderr, "out[%d] = %g, expected %g\n", i, out[i], expected[i]);

  /* In place: out is x itself. */
  if (call_scale(op, &tx, &tx, alpha) != KH_OK) {
    fprintf(stderr, "scale in place failed: %s\n", kh_last_error());
    return 1;
  }
  for (int i = 0; i < kN; ++i)
    if (x[i] != expected[i] && ++failures <= 5) fprintf(stderr, "in place x[%d] = %g, expected %g\n", i, x[i], expected[i]);

  /* A bad call is refused, and says why: out shorter than x. */
  int64_t short_shape[1] = {kN - 1};
  DLTensor tshort = f32_vector(out, short_shape);
  if (call_scale(op, &tshort, &tx, alpha) != KH_ERROR_INVALID_ARGUMENT || strstr(kh_last_error(), "out") == NULL) {
    fprintf(stderr, "a call with mismatched shapes was not refused as expected (%s)\n", kh_last_error());
    ++failures;
  }

  kh_kernel_release(kernel);
  if (failures != 0) {
    fprintf(stderr, "scale: %d failures\n", failures);
    return 1;
  }
  printf("scale ok: %d elements, in place and out of place, bad shapes refused\n", kN);
  return 0;
}
