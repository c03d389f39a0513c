// A CUDA runtime for the CPU, so that our kernels (minitorch/_gpu/kernels) run and can be checked
// on machines without a GPU. The loader (tests/cuda_emulator/__init__.py) compiles
// "this header + the text NVRTC would compile + one launcher per name expression" with g++.
//
// Every CUDA thread of a block is a fiber (ucontext) on one OS thread; blocks run one after
// another. A fiber runs until it reaches a barrier (__syncthreads, or a warp shuffle, which
// exchanges values through a per-warp slot array), so between barriers the threads of a block
// run one whole thread at a time. That order is a legal CUDA schedule, and the order alternates
// between ascending and descending thread (and block) indices, so a kernel that reads another
// thread's write without a barrier sees stale data in one of the two orders.
//
// What it reports (as an error string back to Python) instead of computing garbage:
// - a warp shuffle with the full mask while a lane of that warp has exited or is elsewhere;
// - lanes of a warp, or threads of a block, meeting at barriers of different call sites or
//   different iteration counts (divergent barriers, which hang or corrupt on a GPU);
// - a deadlock (every live thread waiting at a barrier that can never complete);
// - a memory fault (SIGSEGV/SIGBUS, e.g. reading into the guard page after a buffer), with the
//   faulting address, the block and the thread.
// Atomics are plain read-modify-writes: fibers never interleave inside one.
#include <cmath>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <type_traits>
#include <ucontext.h>
#include <unistd.h>
#include <utility>

// ---------------------------------------------------------------------------------------------
// CUDA keywords

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// Shared memory is per block; blocks run one at a time, so one static copy serves every block.
#define __shared__ static

struct uint3 {
    unsigned int x, y, z;
};
typedef uint3 dim3;
struct __attribute__((aligned(16))) float4 {
    float x, y, z, w;
};
struct __attribute__((aligned(16))) double2 {
    double x, y;
};

namespace {
namespace emu {

constexpr int WARP = 32;
constexpr int MAX_THREADS = 1024;
constexpr size_t STACK_BYTES = 256 * 1024;

enum State { READY, WAIT_BLOCK, WAIT_WARP, DONE };

struct Thread {
    uint3 idx;
    int linear, warp;
    State state;
    ucontext_t context;
    char* stack;
    unsigned long long wait_generation;
    long long passed[2];         // block / warp barriers arrived at so far (divergence check)
};

struct Barrier {
    int kind;                    // 0: the block's __syncthreads, 1: a warp's shuffles
    int arrived = 0, live = 0;
    unsigned long long generation = 0;
    long long count = -1;
    int site = -1;
};

// Launches are serialised by the caller (the Python loader holds a lock), so one global state.
struct Scheduler {
    Thread threads[MAX_THREADS];
    char* stacks[MAX_THREADS];
    int stack_count = 0;
    Barrier warps[MAX_THREADS / WARP];
    unsigned long long exchange[MAX_THREADS];   // one 8-byte slot per thread for shuffles
    Barrier block;
    Thread* current = nullptr;
    ucontext_t main_context;
    void (*body)(void*) = nullptr;
    void* body_arg = nullptr;
    char error[512];
    uint3 block_idx, block_dim, grid_dim;
    sigjmp_buf fault_jump;
    volatile sig_atomic_t in_launch = 0;
    volatile uintptr_t fault_address = 0;
    volatile int fault_signal = 0;
};

Scheduler S;

bool failed() { return S.error[0] != 0; }

void fail(const char* message) {
    if (!failed()) {
        std::snprintf(S.error, sizeof S.error, "%s (block (%u,%u,%u), thread (%u,%u,%u))",
                      message, S.block_idx.x, S.block_idx.y, S.block_idx.z, S.current->idx.x,
                      S.current->idx.y, S.current->idx.z);
    }
}

// Leave the current fiber for good (after an error): the scheduler stops the launch.
[[noreturn]] void abandon() {
    S.current->state = DONE;
    setcontext(&S.main_context);
    std::abort();
}

void yield() { swapcontext(&S.current->context, &S.main_context); }

// Arrive at barrier b (the block's, or one warp's); returns once every live member arrived.
void arrive(Barrier& b, State wait_state, int site, const char* what) {
    Thread* t = S.current;
    const long long passed = ++t->passed[b.kind];
    if (b.arrived == 0) {
        b.count = passed;
        b.site = site;
    } else if (b.count != passed || b.site != site) {
        char text[200];
        std::snprintf(text, sizeof text,
                      "divergent %s: a thread arrived at line %d (its barrier #%lld) while "
                      "others wait at line %d (barrier #%lld)",
                      what, site, passed, b.site, b.count);
        fail(text);
        abandon();
    }
    if (++b.arrived == b.live) {
        b.arrived = 0;
        ++b.generation;
        return;
    }
    t->state = wait_state;
    t->wait_generation = b.generation;
    yield();
    if (failed()) abandon();
}

Barrier& warp_of(Thread* t) { return S.warps[t->warp]; }

void thread_exit(Thread* t) {
    t->state = DONE;
    // Exited threads no longer count towards barriers; a barrier may complete now.
    for (Barrier* b : {&S.block, &warp_of(t)}) {
        --b->live;
        if (b->arrived > 0 && b->arrived == b->live) {
            b->arrived = 0;
            ++b->generation;
        }
    }
}

void fiber_entry() {
    S.body(S.body_arg);
    thread_exit(S.current);
    // returning resumes uc_link, the scheduler
}

bool runnable(const Thread& t) {
    switch (t.state) {
    case READY: return true;
    case WAIT_BLOCK: return S.block.generation != t.wait_generation;
    case WAIT_WARP: return S.warps[t.warp].generation != t.wait_generation;
    default: return false;
    }
}

char* new_stack() {
    // a PROT_NONE guard page below each stack turns an overflow into a reported fault
    long page = sysconf(_SC_PAGESIZE);
    char* base = static_cast<char*>(mmap(nullptr, STACK_BYTES + page, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (base == MAP_FAILED) std::abort();
    mprotect(base, page, PROT_NONE);
    return base + page;
}

void run_block(int nthreads, bool descending) {
    while (S.stack_count < nthreads) S.stacks[S.stack_count++] = new_stack();
    int nwarps = (nthreads + WARP - 1) / WARP;
    for (int w = 0; w < nwarps; ++w) S.warps[w] = Barrier{1};
    S.block = Barrier{0};
    S.block.live = nthreads;
    for (int i = 0; i < nthreads; ++i) {
        Thread& t = S.threads[i];
        t.idx.x = i % S.block_dim.x;
        t.idx.y = (i / S.block_dim.x) % S.block_dim.y;
        t.idx.z = i / (S.block_dim.x * S.block_dim.y);
        t.linear = i;
        t.warp = i / WARP;
        t.state = READY;
        t.passed[0] = t.passed[1] = 0;
        t.stack = S.stacks[i];
        ++S.warps[t.warp].live;
        getcontext(&t.context);
        t.context.uc_stack.ss_sp = t.stack;
        t.context.uc_stack.ss_size = STACK_BYTES;
        t.context.uc_link = &S.main_context;
        makecontext(&t.context, fiber_entry, 0);
    }
    int live = nthreads;
    while (live > 0 && !failed()) {
        bool progressed = false;
        for (int k = 0; k < nthreads && !failed(); ++k) {
            Thread& t = S.threads[descending ? nthreads - 1 - k : k];
            if (!runnable(t)) continue;
            t.state = READY;
            S.current = &t;
            swapcontext(&S.main_context, &t.context);
            progressed = true;
            if (t.state == DONE) --live;
        }
        if (!progressed && live > 0) {
            for (int i = 0; i < nthreads; ++i) {
                if (S.threads[i].state != DONE) {
                    S.current = &S.threads[i];
                    break;
                }
            }
            fail("deadlock: every live thread waits at a barrier that cannot complete");
        }
    }
}

// Kernel parameters arrive as an array of pointers to their values (as cuLaunchKernel takes).
template <typename... P, size_t... I>
void call_with(void (*kernel)(P...), void** args, std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(args[I])...);
}

template <typename... P> struct Call {
    void (*kernel)(P...);
    void** args;
    static void run(void* self) {
        Call* c = static_cast<Call*>(self);
        call_with(c->kernel, c->args, std::index_sequence_for<P...>{});
    }
};

void on_fault(int signal, siginfo_t* info, void*) {
    if (!S.in_launch) {     // not ours: fall back to the default action
        ::signal(signal, SIG_DFL);
        raise(signal);
        return;
    }
    S.fault_address = reinterpret_cast<uintptr_t>(info->si_addr);
    S.fault_signal = signal;
    siglongjmp(S.fault_jump, 1);
}

// Runs the grid; returns 0, or 1 with a message in `error` (at most error_size bytes).
template <typename... P>
int launch(void (*kernel)(P...), const unsigned* grid, const unsigned* block, void** args,
           char* error, size_t error_size) {
    Call<P...> call{kernel, args};
    S.body = &Call<P...>::run;
    S.body_arg = &call;
    S.error[0] = 0;
    S.grid_dim = uint3{grid[0], grid[1], grid[2]};
    S.block_dim = uint3{block[0], block[1], block[2]};
    const int nthreads = (int)(block[0] * block[1] * block[2]);
    if (nthreads < 1 || nthreads > MAX_THREADS) {
        std::snprintf(error, error_size, "invalid block of %d threads", nthreads);
        return 1;
    }
    const unsigned long long nblocks = (unsigned long long)grid[0] * grid[1] * grid[2];

    // faults inside the kernel come back here, on an alternate stack (the fiber's may be gone)
    static char signal_stack[1 << 16];
    stack_t alt{}, old_alt{};
    alt.ss_sp = signal_stack;
    alt.ss_size = sizeof signal_stack;
    sigaltstack(&alt, &old_alt);
    struct sigaction action {}, old_segv{}, old_bus{};
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &old_segv);
    sigaction(SIGBUS, &action, &old_bus);
    S.in_launch = 1;
    if (sigsetjmp(S.fault_jump, 1) == 0) {
        // Blocks are taken alternately from both ends of the grid, and threads in ascending
        // and descending order alternately (starting with the other order on every launch).
        static unsigned long long launches = 0;
        const bool flip = launches++ % 2 == 1;
        for (unsigned long long n = 0; n < nblocks && !failed(); ++n) {
            const bool from_end = n % 2 == 1;
            unsigned long long b = from_end ? nblocks - 1 - n / 2 : n / 2;
            const bool descending = from_end != flip;
            S.block_idx = uint3{(unsigned)(b % grid[0]), (unsigned)((b / grid[0]) % grid[1]),
                                (unsigned)(b / ((unsigned long long)grid[0] * grid[1]))};
            run_block(nthreads, descending);
        }
    } else {
        char text[160];
        std::snprintf(text, sizeof text, "memory fault (signal %d) at address 0x%llx",
                      (int)S.fault_signal, (unsigned long long)S.fault_address);
        S.error[0] = 0;
        fail(text);
    }
    S.in_launch = 0;
    sigaction(SIGSEGV, &old_segv, nullptr);
    sigaction(SIGBUS, &old_bus, nullptr);
    sigaltstack(&old_alt, nullptr);
    if (!failed()) return 0;
    std::snprintf(error, error_size, "%s", S.error);
    return 1;
}

// ---------------------------------------------------------------------------------------------
// warp shuffles: every lane posts its value, then reads its source lane's after the warp met

template <typename T> T shuffle(T v, int source, int site) {
    static_assert(sizeof(T) <= 8, "shuffled values are at most 8 bytes");
    Thread* t = S.current;
    Barrier& w = warp_of(t);
    if (w.live != WARP) {
        fail("warp shuffle with the full mask while a lane of the warp has exited or does not "
             "exist");
        abandon();
    }
    unsigned long long* slots = &S.exchange[(size_t)t->warp * WARP];
    const int lane = t->linear % WARP;
    std::memcpy(&slots[lane], &v, sizeof(T));
    arrive(w, WAIT_WARP, site, "warp shuffle");
    T out = v;
    if (0 <= source && source < WARP) std::memcpy(&out, &slots[source], sizeof(T));
    arrive(w, WAIT_WARP, site, "warp shuffle");     // nobody overwrites a slot still being read
    return out;
}

int lane_of_current() { return S.current->linear % WARP; }

}  // namespace emu
}  // namespace

#define threadIdx (emu::S.current->idx)
#define blockIdx (emu::S.block_idx)
#define blockDim (emu::S.block_dim)
#define gridDim (emu::S.grid_dim)
#define warpSize 32

#define __syncthreads() emu::arrive(emu::S.block, emu::WAIT_BLOCK, __LINE__, "__syncthreads")
#define __shfl_sync(mask, v, src) emu::shuffle((v), (src), __LINE__)
#define __shfl_down_sync(mask, v, d) \
    emu::shuffle((v), emu::lane_of_current() + (d), __LINE__)
#define __shfl_up_sync(mask, v, d) emu::shuffle((v), emu::lane_of_current() - (d), __LINE__)
#define __shfl_xor_sync(mask, v, m) emu::shuffle((v), emu::lane_of_current() ^ (m), __LINE__)

// ---------------------------------------------------------------------------------------------
// device intrinsics

template <typename T> inline T min(T a, T b) { return b < a ? b : a; }
template <typename T> inline T max(T a, T b) { return a < b ? b : a; }

inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline float __int_as_float(int x) {
    float f;
    std::memcpy(&f, &x, sizeof f);
    return f;
}
inline float __uint_as_float(unsigned int x) {
    float f;
    std::memcpy(&f, &x, sizeof f);
    return f;
}
inline unsigned int __float_as_uint(float f) {
    unsigned int x;
    std::memcpy(&x, &f, sizeof x);
    return x;
}
inline double __longlong_as_double(long long x) {
    double d;
    std::memcpy(&d, &x, sizeof d);
    return d;
}

template <typename T> inline T atomicAdd(T* p, T v) {
    T old = *p;
    *p = old + v;
    return old;
}
template <typename T> inline T atomicOr(T* p, T v) {
    T old = *p;
    *p = old | v;
    return old;
}
template <typename T> inline T atomicCAS(T* p, T expected, T desired) {
    T old = *p;
    if (old == expected) *p = desired;
    return old;
}
template <typename T> inline T atomicMax(T* p, T v) {
    T old = *p;
    *p = old < v ? v : old;
    return old;
}
