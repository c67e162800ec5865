/* A C host shaped like an inference engine's decode loop: loads kernels-community/attention
 * through kh_load_kernel(), keeps a paged KV cache (blocks of BLOCK_SIZE tokens handed out in
 * shuffled order and found through a block table), and for STEPS steps appends each sequence's
 * new token's K and V to the cache and calls attention_decode_paged for the new query token.
 * Every step is checked against the host's own float64 loop over the same bf16 values.
 *
 * What an engine takes from it (docs/ops-attention-decode.md is the op's reference):
 *  - the workspace is sized once, from shapes alone, by asking the op (kh_op_workspace_size,
 *    with no data and no workspace yet), for the largest batch and table width the engine will
 *    use; it needs no initialisation and is scratch after each call. The host never re-derives
 *    the package's sizing rule, so a new release that splits differently sizes itself;
 *  - seq_lens counts the keys including the new token; block-table entries past a sequence's
 *    last block are never read (here they hold -1);
 *  - a too-small workspace is refused before anything runs, with the size it needs.
 * kh picks the build for this machine: a CUDA build gets its tensors on GPU 0 (cuda_device.c),
 * a CPU build keeps them in host memory.
 * Usage: decode_host [org/name@version]   (default kernels-community/attention@1; hub from
 * $KH_HUB, cache from $KH_CACHE) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kh/kh.h>

#include "cuda_device.h"

/* Shapes: GQA with 4 query heads a kv head; a table wide enough that the op may split the
 * longer sequences over the key length (max_kv / 128 > 1), so the workspace is used. */
enum {
  BATCH = 4,
  HEADS_Q = 8,
  HEADS_KV = 2,
  HEAD_DIM = 64,
  BLOCK_SIZE = 16,
  MAX_BLOCKS = 32, /* block_table's width: up to 512 tokens a sequence */
  NUM_BLOCKS = BATCH * MAX_BLOCKS,
  STEPS = 3
};
/* Tokens already in the cache before the first step (a prompt's K and V, written by prefill). */
static const int kPromptLens[BATCH] = {1, 16, 200, 450};
/* bf16 keeps 8 bits of mantissa: outputs (weighted means of values in [-1, 1]) round to within
 * 2^-9 of the exact result, and a GPU build's float32 accumulation adds less than that. A wrong
 * block, key or mask moves outputs by far more. */
static const double kOutTolerance = 1e-2, kLseTolerance = 1e-3;

typedef struct {
  uint16_t q[BATCH * HEADS_Q * HEAD_DIM];                             /* (batch, 1, heads_q, d) */
  uint16_t k_cache[NUM_BLOCKS * BLOCK_SIZE * HEADS_KV * HEAD_DIM];    /* (blocks, block_size, heads_kv, d) */
  uint16_t v_cache[NUM_BLOCKS * BLOCK_SIZE * HEADS_KV * HEAD_DIM];
  int32_t block_table[BATCH * MAX_BLOCKS];                            /* (batch, max_blocks) */
  int32_t seq_lens[BATCH];
  uint16_t out[BATCH * HEADS_Q * HEAD_DIM];
  float lse[BATCH * HEADS_Q]; /* (batch, heads_q, 1) */
} decode_state;

/* bf16 is the top half of a float32, rounded to nearest even (no NaNs arise here). */
static uint16_t bf16_from_float(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static double bf16_to_double(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint16_t random_bf16(void) { return bf16_from_float((float)rand() / (float)RAND_MAX * 2.0f - 1.0f); }


/* Where token t of sequence b lives in either cache: element offset of its kv head 0. */
static size_t cache_offset(const decode_state* s, int b, int t) {
  const int32_t block = s->block_table[b * MAX_BLOCKS + t / BLOCK_SIZE];
  return ((size_t)block * BLOCK_SIZE + (size_t)(t % BLOCK_SIZE)) * HEADS_KV * HEAD_DIM;
}

/* Writes random K and V for tokens [from, to) of sequence b into its blocks. */
static void append_tokens(decode_state* s, int b, int from, int to) {
  for (int t = from; t < to; ++t) {
    const size_t at = cache_offset(s, b, t);
    for (int e = 0; e < HEADS_KV * HEAD_DIM; ++e) {
      s->k_cache[at + e] = random_bf16();
      s->v_cache[at + e] = random_bf16();
    }
  }
}

/* Blocks in a shuffled order, as a block allocator hands them out after some churn; entries
 * past each prompt's blocks start as -1 and get a block when a step crosses into them. */
static void init_cache(decode_state* s, int32_t* free_blocks, int* next_free) {
  for (int i = 0; i < NUM_BLOCKS; ++i) free_blocks[i] = i;
  for (int i = NUM_BLOCKS - 1; i > 0; --i) {
    const int j = rand() % (i + 1);
    const int32_t tmp = free_blocks[i];
    free_blocks[i] = free_blocks[j];
    free_blocks[j] = tmp;
  }
  *next_free = 0;
  for (int i = 0; i < BATCH * MAX_BLOCKS; ++i) s->block_table[i] = -1;
  for (int b = 0; b < BATCH; ++b) {
    for (int j = 0; j < (kPromptLens[b] + BLOCK_SIZE - 1) / BLOCK_SIZE; ++j)
      s->block_table[b * MAX_BLOCKS + j] = free_blocks[(*next_free)++];
    s->seq_lens[b] = kPromptLens[b];
    append_tokens(s, b, 0, kPromptLens[b]);
  }
}

/* One decode step's host side: a new token a sequence (its block first if it starts one),
 * its K and V appended, seq_lens counting it, and a new query. */
static void next_token(decode_state* s, const int32_t* free_blocks, int* next_free) {
  for (int b = 0; b < BATCH; ++b) {
    const int t = s->seq_lens[b];
    if (t % BLOCK_SIZE == 0) s->block_table[b * MAX_BLOCKS + t / BLOCK_SIZE] = free_blocks[(*next_free)++];
    append_tokens(s, b, t, t + 1);
    s->seq_lens[b] = t + 1;
  }
  for (int i = 0; i < BATCH * HEADS_Q * HEAD_DIM; ++i) s->q[i] = random_bf16();
}

/* Tensors of one call, pointing at host memory (CPU build) or at the GPU copies. */
typedef struct {
  void *q, *k_cache, *v_cache, *block_table, *seq_lens, *out, *lse, *workspace;
  int64_t workspace_floats;
  DLDevice device;
} decode_buffers;

/* The arguments of attention_decode_paged(out, lse, q, k_cache, v_cache, block_table,
 * seq_lens, workspace, scale, window_left, softcap) for q_len 1, over m's memory: the tensor
 * descriptions go into t (which must outlive args). With m->workspace NULL the workspace
 * argument is left none, as a size query before it exists passes it. */
typedef struct {
  int64_t q[4], cache[4], table[2], lens[1], lse[3], ws[1];
  DLTensor t[8];
  kh_value args[11];
} decode_call;

static void decode_arguments(const decode_buffers* m, decode_call* c) {
  const int64_t q_shape[4] = {BATCH, 1, HEADS_Q, HEAD_DIM}, cache_shape[4] = {NUM_BLOCKS, BLOCK_SIZE, HEADS_KV, HEAD_DIM};
  memcpy(c->q, q_shape, sizeof c->q);
  memcpy(c->cache, cache_shape, sizeof c->cache);
  c->table[0] = BATCH, c->table[1] = MAX_BLOCKS, c->lens[0] = BATCH;
  c->lse[0] = BATCH, c->lse[1] = HEADS_Q, c->lse[2] = 1, c->ws[0] = m->workspace_floats;
  const DLDataType bf16 = {kDLBfloat, 16, 1}, i32 = {kDLInt, 32, 1}, f32 = {kDLFloat, 32, 1};
  const DLTensor t[8] = {
      {m->out, m->device, 4, bf16, c->q, NULL, 0},         {m->lse, m->device, 3, f32, c->lse, NULL, 0},
      {m->q, m->device, 4, bf16, c->q, NULL, 0},           {m->k_cache, m->device, 4, bf16, c->cache, NULL, 0},
      {m->v_cache, m->device, 4, bf16, c->cache, NULL, 0}, {m->block_table, m->device, 2, i32, c->table, NULL, 0},
      {m->seq_lens, m->device, 1, i32, c->lens, NULL, 0},  {m->workspace, m->device, 1, f32, c->ws, NULL, 0},
  };
  memcpy(c->t, t, sizeof c->t);
  memset(c->args, 0, sizeof c->args);
  for (int i = 0; i < 8; ++i) {
    c->args[i].kind = KH_VALUE_TENSOR;
    c->args[i].u.tensor = &c->t[i];
  }
  if (m->workspace == NULL) c->args[7].kind = KH_VALUE_NONE;
  c->args[8].kind = KH_VALUE_DOUBLE;
  c->args[8].u.d = 1.0 / sqrt((double)HEAD_DIM); /* scale */
  c->args[9].kind = KH_VALUE_INT;
  c->args[9].u.i = -1; /* window_left: none */
  c->args[10].kind = KH_VALUE_DOUBLE;
  c->args[10].u.d = 0.0; /* softcap: none */
}

static kh_status call_decode(const kh_op* op, const decode_buffers* m) {
  decode_call c;
  decode_arguments(m, &c);
  return kh_op_call(op, c.args, 11, NULL); /* NULL: the default stream, for a GPU build */
}

/* The workspace the op says calls of these shapes need, in float32 elements (-1 on failure):
 * asked with shapes alone, before any buffer exists. */
static int64_t query_workspace_floats(const kh_op* op, DLDevice device) {
  decode_buffers shapes = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, device};
  decode_call c;
  decode_arguments(&shapes, &c);
  uint64_t bytes = 0;
  if (kh_op_workspace_size(op, c.args, 11, &bytes) != KH_OK) {
    fprintf(stderr, "decode_host: the workspace query failed: %s\n", kh_last_error());
    return -1;
  }
  return (int64_t)(bytes / sizeof(float));
}

/* The largest differences of out and lse from a float64 reference over the same bf16 inputs;
 * NaN propagates as a failure. */
static void max_errors(const decode_state* s, double* out_error, double* lse_error) {
  const double scale = 1.0 / sqrt((double)HEAD_DIM);
  static double scores[MAX_BLOCKS * BLOCK_SIZE];
  *out_error = 0.0;
  *lse_error = 0.0;
  for (int b = 0; b < BATCH; ++b) {
    const int len = s->seq_lens[b];
    for (int h = 0; h < HEADS_Q; ++h) {
      const int hk = h / (HEADS_Q / HEADS_KV);
      const uint16_t* q = s->q + ((size_t)b * HEADS_Q + h) * HEAD_DIM;
      double max_score = -INFINITY, sum = 0.0;
      for (int t = 0; t < len; ++t) { /* q_len 1: the new token sees every key */
        const uint16_t* k = s->k_cache + cache_offset(s, b, t) + (size_t)hk * HEAD_DIM;
        double dot = 0.0;
        for (int e = 0; e < HEAD_DIM; ++e) dot += bf16_to_double(q[e]) * bf16_to_double(k[e]);
        scores[t] = scale * dot;
        if (scores[t] > max_score) max_score = scores[t];
      }
      for (int t = 0; t < len; ++t) sum += exp(scores[t] - max_score);
      const double lse_err = fabs((double)s->lse[b * HEADS_Q + h] - (max_score + log(sum)));
      if (!(lse_err <= *lse_error)) *lse_error = lse_err;
      for (int e = 0; e < HEAD_DIM; ++e) {
        double want = 0.0;
        for (int t = 0; t < len; ++t)
          want += exp(scores[t] - max_score) / sum *
                  bf16_to_double(s->v_cache[cache_offset(s, b, t) + (size_t)hk * HEAD_DIM + e]);
        const double err = fabs(bf16_to_double(s->out[((size_t)b * HEADS_Q + h) * HEAD_DIM + e]) - want);
        if (!(err <= *out_error)) *out_error = err;
      }
    }
  }
}

/* GPU copies of the state's tensors and the workspace (0: not allocated). */
typedef struct {
  cuda_device* dev;
  uint64_t q, k_cache, v_cache, block_table, seq_lens, out, lse, workspace;
} gpu_copies;

/* A state tensor and its GPU copy. */
typedef struct {
  uint64_t* dev;
  void* host;
  size_t bytes;
} mirrored;
enum { NUM_MIRRORED = 7 };

static void mirrored_tensors(gpu_copies* g, decode_state* s, mirrored* m) {
  m[0] = (mirrored){&g->q, s->q, sizeof s->q};
  m[1] = (mirrored){&g->k_cache, s->k_cache, sizeof s->k_cache};
  m[2] = (mirrored){&g->v_cache, s->v_cache, sizeof s->v_cache};
  m[3] = (mirrored){&g->block_table, s->block_table, sizeof s->block_table};
  m[4] = (mirrored){&g->seq_lens, s->seq_lens, sizeof s->seq_lens};
  m[5] = (mirrored){&g->out, s->out, sizeof s->out};
  m[6] = (mirrored){&g->lse, s->lse, sizeof s->lse};
}

static void gpu_free(gpu_copies* g, decode_state* s) {
  mirrored m[NUM_MIRRORED];
  mirrored_tensors(g, s, m);
  for (int i = 0; i < NUM_MIRRORED; ++i)
    if (*m[i].dev != 0) cuda_device_free(g->dev, *m[i].dev);
  if (g->workspace != 0) cuda_device_free(g->dev, g->workspace);
  cuda_device_close(g->dev);
  memset(g, 0, sizeof *g);
}

/* Allocates the GPU copies (the workspace once, for the whole loop, as an engine would). */
static int gpu_alloc(gpu_copies* g, decode_state* s, int64_t workspace_floats, char* err, size_t errlen) {
  mirrored m[NUM_MIRRORED];
  mirrored_tensors(g, s, m);
  for (int i = 0; i < NUM_MIRRORED; ++i)
    if (cuda_device_alloc(g->dev, m[i].bytes, m[i].dev, err, errlen) != 0) return -1;
  const size_t ws_bytes = sizeof(float) * (size_t)(workspace_floats > 0 ? workspace_floats : 1);
  return cuda_device_alloc(g->dev, ws_bytes, &g->workspace, err, errlen);
}

/* The step's tensors to the GPU (a real engine writes K and V there directly; out and lse go
 * NaN-filled, so that an element the op leaves unwritten shows), then its outputs back. */
static int gpu_upload(gpu_copies* g, decode_state* s, char* err, size_t errlen) {
  mirrored m[NUM_MIRRORED];
  mirrored_tensors(g, s, m);
  for (int i = 0; i < NUM_MIRRORED; ++i)
    if (cuda_device_upload(g->dev, *m[i].dev, m[i].host, m[i].bytes, err, errlen) != 0) return -1;
  return 0;
}

static int gpu_download(gpu_copies* g, decode_state* s, char* err, size_t errlen) {
  if (cuda_device_sync(g->dev, err, errlen) != 0) return -1;
  if (cuda_device_download(g->dev, s->out, g->out, sizeof s->out, err, errlen) != 0) return -1;
  return cuda_device_download(g->dev, s->lse, g->lse, sizeof s->lse, err, errlen);
}

static void* as_ptr(uint64_t p) { return (void*)(uintptr_t)p; }

/* The decode loop on whichever device the build is for. 0 when every step passed. */
static int run_decode_loop(const kh_op* op, int on_gpu) {
  static decode_state s;
  static int32_t free_blocks[NUM_BLOCKS];
  int next_free = 0, rc = 1;
  char err[256] = "";
  srand(7);
  init_cache(&s, free_blocks, &next_free);

  const DLDevice device = {on_gpu ? kDLCUDA : kDLCPU, 0};
  const int64_t need = query_workspace_floats(op, device);
  if (need < 0) return 1;
  printf("  workspace: %lld float32 elements (the op's answer for batch %d, q_len 1, heads %d/%d, head_dim %d, "
         "%d keys a sequence at most)\n",
         (long long)need, BATCH, HEADS_Q, HEADS_KV, HEAD_DIM, MAX_BLOCKS * BLOCK_SIZE);
  /* Allocated once, as the op says, and reused by every step (on the GPU: its own copy). */
  float* host_workspace = malloc(sizeof(float) * (size_t)(need > 0 ? need : 1));
  if (host_workspace == NULL) {
    fprintf(stderr, "decode_host: out of memory for the workspace\n");
    return 1;
  }

  char device_name[200] = "the CPU";
  gpu_copies g = {0};
  decode_buffers m = {s.q, s.k_cache, s.v_cache, s.block_table, s.seq_lens, s.out, s.lse, host_workspace, need,
                      {kDLCPU, 0}};
  if (on_gpu) {
    g.dev = cuda_device_open(err, sizeof err);
    if (g.dev == NULL) {
      fprintf(stderr, "decode_host: kh chose a CUDA build but the GPU is not usable: %s\n", err);
      free(host_workspace);
      return 1;
    }
    snprintf(device_name, sizeof device_name, "GPU 0, %s", cuda_device_name(g.dev));
    if (gpu_alloc(&g, &s, need, err, sizeof err) != 0) goto failed;
    m = (decode_buffers){as_ptr(g.q),   as_ptr(g.k_cache), as_ptr(g.v_cache),   as_ptr(g.block_table), as_ptr(g.seq_lens),
                         as_ptr(g.out), as_ptr(g.lse),     as_ptr(g.workspace), need,                  {kDLCUDA, 0}};
  }

  /* A host whose workspace is short is told so before anything runs. */
  if (need > 0) {
    decode_buffers small = m;
    small.workspace_floats = need - 1;
    if (call_decode(op, &small) == KH_OK) {
      fprintf(stderr, "decode_host: a workspace one element short of the op's answer was accepted\n");
      goto done;
    }
    printf("  refused as expected: %s\n", kh_last_error());
  }

  for (int step = 0; step < STEPS; ++step) {
    next_token(&s, free_blocks, &next_free);
    for (int i = 0; i < BATCH * HEADS_Q * HEAD_DIM; ++i) s.out[i] = 0x7fc0; /* bf16 NaN: unwritten shows */
    for (int i = 0; i < BATCH * HEADS_Q; ++i) s.lse[i] = NAN;
    if (on_gpu && gpu_upload(&g, &s, err, sizeof err) != 0) goto failed;
    if (call_decode(op, &m) != KH_OK) {
      fprintf(stderr, "decode_host: attention_decode_paged failed: %s\n", kh_last_error());
      goto done;
    }
    if (on_gpu && gpu_download(&g, &s, err, sizeof err) != 0) goto failed;
    double out_error, lse_error;
    max_errors(&s, &out_error, &lse_error);
    printf("  step %d: seq_lens %d %d %d %d, max abs error out %.3g, lse %.3g\n", step + 1, s.seq_lens[0],
           s.seq_lens[1], s.seq_lens[2], s.seq_lens[3], out_error, lse_error);
    if (!(out_error < kOutTolerance) || !(lse_error < kLseTolerance)) {
      printf("attention_decode_paged FAILED on %s at step %d (tolerances: out %.3g, lse %.3g)\n", device_name,
             step + 1, kOutTolerance, kLseTolerance);
      goto done;
    }
  }
  printf("attention_decode_paged ok (%d steps, batch %d, GQA %d/%d, head_dim %d, block_size %d, on %s)\n", STEPS,
         BATCH, HEADS_Q, HEADS_KV, HEAD_DIM, BLOCK_SIZE, device_name);
  rc = 0;
  goto done;
failed:
  fprintf(stderr, "decode_host: %s\n", err);
done:
  if (g.dev != NULL) gpu_free(&g, &s);
  free(host_workspace);
  return rc;
}

int main(int argc, char** argv) {
  const char* spec = argc > 1 ? argv[1] : "kernels-community/attention@1";
  kh_kernel* kernel = NULL;
  if (kh_load_kernel(spec, NULL, &kernel) != KH_OK) {
    fprintf(stderr, "decode_host: cannot load %s: %s\n", spec, kh_last_error());
    return 1;
  }
  printf("loaded %s %s\n  variant: %s\n", kh_kernel_name(kernel), kh_kernel_version(kernel), kh_kernel_variant(kernel));
  const kh_op* op = NULL;
  if (kh_kernel_find_op(kernel, "attention_decode_paged", &op) != KH_OK) {
    fprintf(stderr, "decode_host: %s (attention_decode_paged came with kernels-community/attention 1.1)\n",
            kh_last_error());
    kh_kernel_release(kernel);
    return 1;
  }
  printf("  op: %s\n", kh_op_schema(op));
  const int on_gpu = kh_kernel_device_type(kernel) == kDLCUDA;
  const int rc = run_decode_loop(op, on_gpu);
  kh_kernel_release(kernel);
  return rc;
}
