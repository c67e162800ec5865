/* A C host: loads a kernel package through kh_load_kernel(), calls its rms_norm on random
 * data and checks the result against its own loop.
 * Usage: c_host [org/name@version]   (hub from $KH_HUB, cache from $KH_CACHE) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <kh/kh.h>

enum { ROWS = 64, HIDDEN = 1024 };

static float random_value(void) { return (float)rand() / (float)RAND_MAX * 4.0f - 2.0f; }

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

  int64_t x_shape[2] = {ROWS, HIDDEN}, w_shape[1] = {HIDDEN};
  DLTensor tx = {x, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, x_shape, NULL, 0};
  DLTensor tout = {out, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, x_shape, NULL, 0};
  DLTensor tw = {weight, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, w_shape, NULL, 0};
  const double eps = 1e-6;
  kh_value args[4];
  args[0].kind = KH_VALUE_TENSOR;
  args[0].u.tensor = &tout;
  args[1].kind = KH_VALUE_TENSOR;
  args[1].u.tensor = &tx;
  args[2].kind = KH_VALUE_TENSOR;
  args[2].u.tensor = &tw;
  args[3].kind = KH_VALUE_DOUBLE;
  args[3].u.d = eps;
  if (kh_op_call(op, args, 4, NULL) != KH_OK) {
    fprintf(stderr, "c_host: rms_norm failed: %s\n", kh_last_error());
    kh_kernel_release(kernel);
    return 1;
  }

  double max_error = 0.0;
  for (int r = 0; r < ROWS; ++r) {
    double sum_sq = 0.0;
    for (int c = 0; c < HIDDEN; ++c) sum_sq += (double)x[r * HIDDEN + c] * x[r * HIDDEN + c];
    const double inv_rms = 1.0 / sqrt(sum_sq / HIDDEN + eps);
    for (int c = 0; c < HIDDEN; ++c) {
      const double want = x[r * HIDDEN + c] * inv_rms * weight[c];
      const double err = fabs((double)out[r * HIDDEN + c] - want);
      if (!(err <= max_error)) max_error = err; /* NaN propagates as a failure */
    }
  }
  kh_kernel_release(kernel);
  if (!(max_error < 1e-4)) {
    printf("rms_norm FAILED (max abs error %.3g)\n", max_error);
    return 1;
  }
  printf("rms_norm ok (max abs error %.3g over %d x %d)\n", max_error, ROWS, HIDDEN);
  return 0;
}
