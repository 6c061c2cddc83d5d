/* cuda_emu.h: run cursched's CUDA kernels on the CPU (part of cursched; do not edit).
 *
 * The .cu text the GPU would compile is included after this header and compiled as C++ by
 * the host compiler. Each thread of a block is a cooperative fiber (ucontext) with its own
 * stack; __syncthreads() switches back to the block's scheduler, which resumes every thread
 * in turn until all have reached the barrier (or finished). Blocks run one after another.
 * __shared__ is `static`: one copy, which the block's threads share.
 *
 * A barrier that some threads of a block reach while others have finished is reported
 * (CS_EMU_DIVERGENT) instead of hanging. So is a release where the waiting threads do not all
 * wait at the same barrier (CS_EMU_MISMATCH): a barrier is its source line, so two different
 * barriers reached at once (`if (t < 16) __syncthreads(); else __syncthreads();`) are never
 * merged into one. (Threads at one line in different iterations of a loop cannot be told
 * apart this way; they end in a divergence or a mismatch at a later barrier.) With `reverse`,
 * the scheduler resumes the threads in reverse order: a kernel with a missing barrier
 * usually computes something else then.
 */
#ifndef CURSCHED_CUDA_EMU_H
#define CURSCHED_CUDA_EMU_H
#define CURSCHED_CUDA_EMULATION 1

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

struct cs_dim3 {
    unsigned x, y, z;
};
typedef cs_dim3 dim3;

static cs_dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __syncthreads() cs_emu_sync(__LINE__)

enum { CS_EMU_OK = 0, CS_EMU_DIVERGENT = 1, CS_EMU_NOMEM = 2, CS_EMU_MISMATCH = 3 };
enum { CS_READY = 0, CS_AT_BARRIER = 1, CS_DONE = 2 };

struct cs_fiber {
    ucontext_t ctx;
    int state;
    cs_dim3 tid;
    char *stack;
    long line; /* the source line of the barrier it waits at */
};

static ucontext_t cs_sched_ctx;
static cs_fiber *cs_fibers;
static int cs_current;
static void (*cs_body)(void *);
static void *cs_body_arg;
/* Which block and how many threads had stopped at a barrier, for the error message; for a
 * mismatch, the two threads (linear ids) and the barriers (lines) they wait at. */
static long cs_emu_error_block[3];
static long cs_emu_error_waiting;
static long cs_emu_error_pair[4];

static const size_t CS_STACK = 256 * 1024;

static void cs_emu_sync(long line) {
    cs_fiber *f = &cs_fibers[cs_current];
    f->state = CS_AT_BARRIER;
    f->line = line;
    swapcontext(&f->ctx, &cs_sched_ctx);
}

static void cs_fiber_entry(void) {
    cs_body(cs_body_arg);
    cs_fibers[cs_current].state = CS_DONE;
    /* returning resumes uc_link: the scheduler */
}

template <class F> static void cs_trampoline(void *p) { (*(F *)p)(); }

static int cs_emu_launch(cs_dim3 grid, cs_dim3 block, int reverse, void (*body)(void *),
                         void *arg) {
    long n = (long)block.x * block.y * block.z;
    cs_fibers = (cs_fiber *)calloc((size_t)n, sizeof(cs_fiber));
    if (!cs_fibers) return CS_EMU_NOMEM;
    for (long t = 0; t < n; t++) {
        cs_fibers[t].stack = (char *)malloc(CS_STACK);
        if (!cs_fibers[t].stack) {
            for (long u = 0; u < t; u++) free(cs_fibers[u].stack);
            free(cs_fibers);
            return CS_EMU_NOMEM;
        }
    }
    cs_body = body;
    cs_body_arg = arg;
    gridDim = grid;
    blockDim = block;
    int rc = CS_EMU_OK;
    for (unsigned bz = 0; bz < grid.z && rc == CS_EMU_OK; bz++)
    for (unsigned by = 0; by < grid.y && rc == CS_EMU_OK; by++)
    for (unsigned bx = 0; bx < grid.x && rc == CS_EMU_OK; bx++) {
        blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz;
        for (long t = 0; t < n; t++) {
            cs_fiber *f = &cs_fibers[t];
            f->tid.x = (unsigned)(t % block.x);
            f->tid.y = (unsigned)((t / block.x) % block.y);
            f->tid.z = (unsigned)(t / ((long)block.x * block.y));
            f->state = CS_READY;
            f->line = 0;
            getcontext(&f->ctx);
            f->ctx.uc_stack.ss_sp = f->stack;
            f->ctx.uc_stack.ss_size = CS_STACK;
            f->ctx.uc_link = &cs_sched_ctx;
            makecontext(&f->ctx, cs_fiber_entry, 0);
        }
        for (;;) {
            for (long k = 0; k < n; k++) {
                long t = reverse ? n - 1 - k : k;
                if (cs_fibers[t].state != CS_READY) continue;
                cs_current = (int)t;
                threadIdx = cs_fibers[t].tid;
                swapcontext(&cs_sched_ctx, &cs_fibers[t].ctx);
            }
            long waiting = 0, done = 0;
            for (long t = 0; t < n; t++) {
                waiting += cs_fibers[t].state == CS_AT_BARRIER;
                done += cs_fibers[t].state == CS_DONE;
            }
            if (done == n) break;
            if (done > 0) {
                /* some threads finished while others wait: a barrier not reached by all */
                cs_emu_error_block[0] = bx; cs_emu_error_block[1] = by; cs_emu_error_block[2] = bz;
                cs_emu_error_waiting = waiting;
                rc = CS_EMU_DIVERGENT;
                break;
            }
            /* every thread waits: at one barrier? */
            for (long t = 1; t < n && rc == CS_EMU_OK; t++) {
                cs_fiber *a = &cs_fibers[0], *b = &cs_fibers[t];
                if (a->line != b->line) {
                    long pair[4] = {0, t, a->line, b->line};
                    memcpy(cs_emu_error_pair, pair, sizeof pair);
                    cs_emu_error_block[0] = bx; cs_emu_error_block[1] = by;
                    cs_emu_error_block[2] = bz;
                    rc = CS_EMU_MISMATCH;
                }
            }
            if (rc != CS_EMU_OK) break;
            for (long t = 0; t < n; t++) cs_fibers[t].state = CS_READY;
        }
    }
    for (long t = 0; t < n; t++) free(cs_fibers[t].stack);
    free(cs_fibers);
    cs_fibers = 0;
    return rc;
}

extern "C" long cs_emu_error_info(int k) {
    if (k < 3) return cs_emu_error_block[k];
    return k == 3 ? cs_emu_error_waiting : cs_emu_error_pair[k - 4];
}

#endif /* CURSCHED_CUDA_EMU_H */
