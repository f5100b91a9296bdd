/* A stand-in for libcuda.so.1 with the entry points gemmlab.driver calls: it records every call instead of
   talking to a GPU, so the tests can check on the host what a plan hands the driver. Tensor maps are "encoded"
   as readable words: [0] magic, [1] data type, [2] address, [3..4] dims, [5] row stride, [6..7] box,
   [8] swizzle, [9] L2 promotion, [10] rank. */
#include <stdint.h>
#include <string.h>

typedef int CUresult;
enum { MAXF = 16, MAXL = 64, MAXB = 1024 };

struct Sig { uintptr_t f; int n; size_t sizes[32]; };
static struct Sig sigs[MAXF];
static int n_sigs;

struct Launch {
  uintptr_t f, stream;
  unsigned grid[3], block[3], smem, cluster[3], cooperative;
  size_t len;
  unsigned char params[MAXB];
};
static struct Launch launches[MAXL];
static int n_launches, n_replaced, n_set_context, fail_next, opaque_maps, n_encoded;
static uintptr_t ctx_current = 0x1000;

struct Copy { uint64_t dst, dst_pitch, src, src_pitch, width, height; uintptr_t stream; };
static struct Copy copies[MAXL];
static int n_copies;

/* cuStreamIsCapturing says ACTIVE for the stream stub_capture names (0: none); cuMemsetD8Async is recorded */
struct Memset { uint64_t dst, value, n; uintptr_t stream; };
static struct Memset memsets[MAXL];
static int n_memsets;
static uintptr_t capture_stream;

void stub_reset(void) {
  n_sigs = n_launches = n_replaced = n_set_context = n_copies = n_memsets = fail_next = 0;
  capture_stream = 0;
  ctx_current = 0x1000;
}
/* opaque_maps = 1: encoded maps hide their address (mixed with a count of encodes), as a driver may */
void stub_opaque_maps(int on) { opaque_maps = on; }
void stub_signature(uintptr_t f, int n, const size_t *sizes) {
  if (n_sigs == MAXF) return;  /* past the table: a test that loads this many kernels resets first */
  sigs[n_sigs].f = f;
  sigs[n_sigs].n = n;
  memcpy(sigs[n_sigs].sizes, sizes, n * sizeof(size_t));
  n_sigs++;
}
void stub_set_context(uintptr_t ctx) { ctx_current = ctx; }
void stub_fail_next(int err) { fail_next = err; }
int stub_launches(void) { return n_launches; }
int stub_replaced(void) { return n_replaced; }
int stub_set_context_calls(void) { return n_set_context; }
uintptr_t stub_context(void) { return ctx_current; }
int stub_copies(void) { return n_copies; }
void stub_launch(int i, unsigned *geometry, uintptr_t *f_stream, unsigned char *params, size_t *len) {
  memcpy(geometry, launches[i].grid, 3 * sizeof(unsigned));
  memcpy(geometry + 3, launches[i].block, 3 * sizeof(unsigned));
  geometry[6] = launches[i].smem;
  memcpy(geometry + 7, launches[i].cluster, 3 * sizeof(unsigned));
  geometry[10] = launches[i].cooperative;
  f_stream[0] = launches[i].f;
  f_stream[1] = launches[i].stream;
  memcpy(params, launches[i].params, launches[i].len);
  *len = launches[i].len;
}
void stub_copy(int i, uint64_t *out) { memcpy(out, &copies[i], 7 * sizeof(uint64_t)); }
void stub_capture(uintptr_t stream) { capture_stream = stream; }
int stub_memsets(void) { return n_memsets; }
void stub_memset(int i, uint64_t *out) { memcpy(out, &memsets[i], 4 * sizeof(uint64_t)); }

static CUresult record(uintptr_t f, const unsigned *grid, const unsigned *block, unsigned smem, uintptr_t stream,
                       const unsigned *cluster, unsigned cooperative, void **params) {
  if (fail_next) { int e = fail_next; fail_next = 0; return e; }
  struct Launch *l = &launches[n_launches++ % MAXL];
  l->f = f;
  l->stream = stream;
  memcpy(l->grid, grid, sizeof l->grid);
  memcpy(l->block, block, sizeof l->block);
  l->smem = smem;
  memcpy(l->cluster, cluster, sizeof l->cluster);
  l->cooperative = cooperative;
  l->len = 0;
  for (int s = n_sigs - 1; s >= 0; --s)  /* the latest signature of f: a handle made again since is another kernel */
    if (sigs[s].f == f) {
      for (int p = 0; p < sigs[s].n && l->len + sigs[s].sizes[p] <= MAXB; ++p) {
        memcpy(l->params + l->len, params[p], sigs[s].sizes[p]);
        l->len += sigs[s].sizes[p];
      }
      break;
    }
  return 0;
}

CUresult cuLaunchKernel(uintptr_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, uintptr_t stream, void **params, void **extra) {
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz}, cluster[3] = {0, 0, 0};
  return record(f, grid, block, smem, stream, cluster, 0, params);
}

/* the attributes gemmlab sets: 2 (CU_LAUNCH_ATTRIBUTE_COOPERATIVE) and 4 (the cluster's dimensions) */
struct Attr { int id; char pad[4]; unsigned value[16]; };
struct Config { unsigned grid[3], block[3], smem; uintptr_t stream; struct Attr *attrs; unsigned n_attrs; };
CUresult cuLaunchKernelEx(const struct Config *c, uintptr_t f, void **params, void **extra) {
  unsigned cluster[3] = {0, 0, 0}, cooperative = 0;
  for (unsigned i = 0; i < c->n_attrs; ++i) {
    if (c->attrs[i].id == 4) memcpy(cluster, c->attrs[i].value, sizeof cluster);
    if (c->attrs[i].id == 2) cooperative = c->attrs[i].value[0];
  }
  return record(f, c->grid, c->block, c->smem, c->stream, cluster, cooperative, params);
}

CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *addr, const uint64_t *dims,
                                const uint64_t *strides, const unsigned *box, const unsigned *elem, int interleave,
                                int swizzle, int l2, int oob) {
  uint64_t *w = (uint64_t *)map;
  if ((uintptr_t)addr % 16) return 1;
  memset(map, 0, 128);
  n_encoded++;
  w[0] = 0x50414d; w[1] = dtype; w[2] = (uintptr_t)addr; w[3] = dims[0];
  if (rank > 1) { w[4] = dims[1]; w[5] = strides[0]; w[7] = box[1]; }
  if (rank > 2) { w[12] = dims[2]; w[13] = strides[1]; w[14] = box[2]; }
  if (opaque_maps) { w[2] ^= (uint64_t)n_encoded << 40; w[11] = n_encoded; }
  w[6] = box[0]; w[8] = swizzle; w[9] = l2; w[10] = rank;
  return 0;
}
CUresult cuTensorMapReplaceAddress(void *map, void *addr) {
  ((uint64_t *)map)[2] = (uintptr_t)addr;
  if (opaque_maps) ((uint64_t *)map)[11] = 0;
  n_replaced++;
  return 0;
}

struct M2D { size_t sx, sy; int smt; const void *sh; uint64_t sd; void *sa; size_t sp; size_t dx, dy; int dmt;
             void *dh; uint64_t dd; void *da; size_t dp; size_t w, h; };
CUresult cuMemcpy2DAsync_v2(const struct M2D *d, uintptr_t stream) {
  struct Copy *c = &copies[n_copies++ % MAXL];
  c->dst = d->dd; c->dst_pitch = d->dp; c->src = d->sd; c->src_pitch = d->sp; c->width = d->w; c->height = d->h;
  c->stream = stream;
  return 0;
}

CUresult cuCtxGetCurrent(uintptr_t *ctx) { *ctx = ctx_current; return 0; }
CUresult cuCtxSetCurrent(uintptr_t ctx) { ctx_current = ctx; n_set_context++; return 0; }
CUresult cuGetErrorName(int err, const char **name) { *name = "CUDA_ERROR_STUB"; return 0; }
CUresult cuStreamIsCapturing(uintptr_t stream, int *status) {
  *status = capture_stream && stream == capture_stream;
  return 0;
}
CUresult cuMemsetD8Async(uint64_t dst, unsigned char value, size_t n, uintptr_t stream) {
  struct Memset *m = &memsets[n_memsets++ % MAXL];
  m->dst = dst; m->value = value; m->n = n; m->stream = stream;
  return 0;
}
