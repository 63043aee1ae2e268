/* unwind.c: stacks that leek's cached unwinder must get exactly right.
 *
 * Built with -O2 -fomit-frame-pointer, so most frames here have no frame pointer and are walked by
 * a rule learned from libunwind (src/preload/unwind-rules.c); some use alloca, which makes GCC keep one.
 * Every allocation has a size of its own, and right after it the same function asks glibc's
 * backtrace() (libgcc's unwinder: code independent of leek and libunwind) for its callers. The
 * program writes "size n frame..." lines to unwind.expect, beside its profile (the directory of
 * LEEK_OUTPUT); test-preload.c checks that the profile's stack for that size has the same
 * callers, frame for frame. The allocations go through malloc, calloc, realloc (of nothing, and
 * of a smaller block), posix_memalign, aligned_alloc and memalign in turn.
 *
 * Each shape runs many times, so that the second and later captures come from the cache: deep
 * recursion through small, large (20 KiB) and alloca frames in three orders; two threads at once;
 * a signal handler that allocates, on the thread's stack and on a sigaltstack; two callers with
 * the same frame size around one function, so that its frame sits at the same place with the
 * same registers while the return address above it changes (the unwinder's record of the previous
 * walk must notice); two callers that put a frame-pointer frame at the same %rsp with a different
 * %rbp. Both also through one call of malloc only, in runs of three calls from each caller, and
 * with that call in the frame-pointer frame itself: the capture then begins at the same frame
 * every time, where the walks kept are found again and must be told apart, by a return address,
 * by a %rbp a frame saved, or by the first frame's own %rbp (src/preload/walks-kept.c); two callers whose paths part only above a long run of frames alike, within a key's line
 * and past it; and a frame of 640 KiB, which no kept walk can span.
 */
#include <alloca.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>

#include "notes.h"

static volatile unsigned long sink;
static size_t next_size = 70001;

static __attribute__((noinline)) size_t take_size(void)
{
	pthread_mutex_lock(&notes_lock);
	size_t s = next_size++;
	pthread_mutex_unlock(&notes_lock);
	return s;
}

/* Every allocating entry point in turn: each hook hands its own frame to the walk, which starts
 * at that frame's caller (src/preload/stack.c). Inlined, so that leaf makes the call. */
static inline __attribute__((always_inline)) char *allocate(size_t size)
{
	void *p = NULL;

	switch (size % 7) {
	case 0:
		return malloc(size);
	case 1:
		return calloc(1, size);
	case 2:
		return realloc(NULL, size);
	case 3:
		p = malloc(16);
		return p ? realloc(p, size) : NULL;
	case 4:
		return posix_memalign(&p, 64, size) ? NULL : p;
	case 5:
		return aligned_alloc(64, size);
	default:
		return memalign(64, size);
	}
}

static __attribute__((noinline, noclone)) unsigned long leaf(void)
{
	size_t size = take_size();
	char *p = allocate(size);

	CHECK(p, "allocation %zu (%zu %% 7)", size, size % 7);
	note(size);
	p[0] = 1;
	unsigned long r = (unsigned long)p[0] + size;
	free(p);
	return r;
}

/* leaf with one allocating call, always the same: a capture that begins at one frame. */
static __attribute__((noinline, noclone)) unsigned long leaf_one(void)
{
	size_t size = take_size();
	char *p = malloc(size);

	CHECK(p, "allocation %zu", size);
	note(size);
	p[0] = 1;
	unsigned long r = (unsigned long)p[0] + size;
	free(p);
	return r;
}

static unsigned long descend(int depth, int shape);

static __attribute__((noinline, noclone)) unsigned long small_frame(int depth, int shape)
{
	unsigned long r = descend(depth - 1, shape);
	sink += r;
	return r + 1;
}

static __attribute__((noinline, noclone)) unsigned long big_frame(int depth, int shape)
{
	volatile char buf[20000];

	buf[depth] = (char)depth;
	unsigned long r = descend(depth - 1, shape) + buf[depth];
	sink += r;
	return r + 2;
}

static __attribute__((noinline, noclone)) unsigned long alloca_frame(int depth, int shape)
{
	volatile char *buf = alloca(64 + (size_t)depth * 40);

	buf[0] = (char)depth;
	unsigned long r = descend(depth - 1, shape) + buf[0];
	sink += r;
	return r + 3;
}

static unsigned long descend(int depth, int shape)
{
	if (depth <= 0)
		return leaf();
	switch ((depth + shape) % 3) {
	case 0:
		return small_frame(depth, shape);
	case 1:
		return big_frame(depth, shape);
	default:
		return alloca_frame(depth, shape);
	}
}

/* k < 0: through leaf_one */
static __attribute__((noinline, noclone)) unsigned long middle(int k)
{
	unsigned long r = (k < 0 ? leaf_one() : leaf()) + (unsigned long)k;
	sink += r;
	return r;
}

static __attribute__((noinline, noclone)) unsigned long twin_a(int k)
{
	unsigned long r = middle(k) + 1;
	sink += r;
	return r;
}

static __attribute__((noinline, noclone)) unsigned long twin_b(int k)
{
	unsigned long r = middle(k) + 2;
	sink += r;
	return r;
}

/* chain's frames are all alike: from twin_c and twin_d, the same %rsp and return addresses for
 * depth frames, and then the twins' own, where the paths part: further up than the four words a
 * kept walk's key compares first (src/preload/walks-kept.c, key_holds), and past the words a key's
 * line holds when depth is large (a wide key). */
static __attribute__((noinline, noclone)) unsigned long chain(int depth, int k)
{
	unsigned long r = depth > 0 ? chain(depth - 1, k) : middle(k);
	sink += r;
	return r + 1;
}

static __attribute__((noinline, noclone)) unsigned long twin_c(int depth, int k)
{
	unsigned long r = chain(depth, k) + 1;
	sink += r;
	return r;
}

static __attribute__((noinline, noclone)) unsigned long twin_d(int depth, int k)
{
	unsigned long r = chain(depth, k) + 2;
	sink += r;
	return r;
}

/* A frame of 640 KiB between the first frame and its callers': further than a key's offsets
 * reach (64 Ki words), so the walk is never kept and is taken again every time. */
static __attribute__((noinline, noclone)) unsigned long far_frame(int k)
{
	volatile char buf[640 << 10];

	buf[k & 1023] = (char)k;
	unsigned long r = twin_c(2, -1) + buf[k & 1023];
	sink += r;
	return r;
}

static void *far_main(void *arg)
{
	for (int i = 0; i < 6; i++)
		sink += far_frame(i + (int)(intptr_t)arg);
	return NULL;
}

/* Two callers of different depth reach fp_level, whose alloca makes up the difference: leaf's
 * frame and fp_level's %rsp and return address are then the same for both, and only %rbp, from
 * which fp_level's caller is found, differs. The deeper caller's return address stays behind in
 * bytes that the other call's alloca takes and never writes, right where the deeper caller's
 * %rbp had pointed: a record of the previous walk followed from %rsp alone would take the deeper
 * caller's frames for the other's. */
static uintptr_t fp_at; /* where fp_level's alloca'd bytes began, last call */

/* alloc: 0 none, 1 through leaf, 2 through leaf_one, 3 here: the capture's first frame is then
 * this frame-pointer frame itself, whose %rbp (the hook's frame saved it) is the only difference
 * between the two callers; through leaf_one, leaf_one's frame saves it too. */
static __attribute__((noinline, noclone)) unsigned long fp_level(size_t pad, int alloc)
{
	volatile char *buf = alloca(pad);
	unsigned long r;

	buf[0] = 1;
	fp_at = (uintptr_t)buf;
	if (alloc == 3) {
		size_t size = take_size();
		char *p = malloc(size);
		CHECK(p, "allocation %zu", size);
		note(size);
		p[0] = 1;
		r = (unsigned long)p[0] + size;
		free(p);
	} else {
		r = alloc == 1 ? leaf() : alloc == 2 ? leaf_one() : 0;
	}
	r += buf[0];
	sink += r;
	return r;
}

static __attribute__((noinline, noclone)) unsigned long fp_near(size_t pad, int alloc)
{
	unsigned long r = fp_level(pad, alloc) + 1;
	sink += r;
	return r;
}

static __attribute__((noinline, noclone)) unsigned long fp_far(size_t pad, int alloc)
{
	volatile char buf[512];

	buf[0] = 2;
	unsigned long r = fp_level(pad, alloc) + buf[0];
	sink += r;
	return r;
}

static void same_sp_other_rbp(void)
{
	size_t pad = 4096;

	fp_near(pad, 0);
	uintptr_t near = fp_at;
	fp_far(pad, 0);
	size_t far_pad = pad - (near - fp_at); /* the far caller's frame is below the near one's */
	fp_far(far_pad, 0);
	CHECK(fp_at == near, "fp_level's alloca at %#lx and %#lx", (unsigned long)near,
	      (unsigned long)fp_at);
	for (int i = 0; i < 20; i++)
		sink += i & 1 ? fp_near(pad, 1) : fp_far(far_pad, 1);
	for (int alloc = 2; alloc <= 3; alloc++)
		for (int i = 0; i < 30; i++)
			sink += i / 3 & 1 ? fp_near(pad, alloc) : fp_far(far_pad, alloc);
}

/* The same, with both callers reached through one call site (a function pointer), so that their
 * return addresses into it are the same: the deeper path's frames, left behind in the bytes the
 * other call's alloca takes and never writes, are still where a walk kept from the deeper path
 * would look, return addresses and all. Only the frame-pointer step's %rbp tells the two apart. */
static __attribute__((noinline, noclone)) unsigned long fp_deep(size_t pad, int alloc)
{
	volatile char buf[256];

	buf[0] = 3;
	unsigned long r = fp_near(pad, alloc) + buf[0]; /* a frame more than fp_near alone */
	sink += r;
	return r;
}

static unsigned long (*volatile fp_via)(size_t pad, int alloc);

static __attribute__((noinline, noclone)) unsigned long fp_call(size_t pad, int alloc)
{
	unsigned long r = fp_via(pad, alloc);
	sink += r;
	return r;
}

static void same_site_other_rbp(void)
{
	size_t pad = 4096;

	fp_via = fp_near;
	fp_call(pad, 0);
	uintptr_t near = fp_at;
	fp_via = fp_deep;
	fp_call(pad, 0);
	size_t deep_pad = pad - (near - fp_at);
	fp_call(deep_pad, 0);
	CHECK(fp_at == near, "fp_level's alloca at %#lx and %#lx", (unsigned long)near,
	      (unsigned long)fp_at);
	for (int alloc = 2; alloc <= 3; alloc++)
		for (int i = 0; i < 30; i++) {
			bool shallow = i / 3 & 1;
			fp_via = shallow ? fp_near : fp_deep;
			sink += fp_call(shallow ? pad : deep_pad, alloc);
		}
}

static void shapes(int rounds)
{
	for (int i = 0; i < rounds; i++)
		for (int shape = 0; shape < 3; shape++)
			sink += descend(1 + (i * 7 + shape) % 40, shape);
}

static void *thread_main(void *arg)
{
	shapes((int)(intptr_t)arg);
	return NULL;
}

static void on_signal(int sig)
{
	sink += descend(5, sig); /* malloc from a handler: defined here, the signal is synchronous */
}

int main(void)
{
	pthread_t t[2];

	shapes(40);
	for (int i = 0; i < 20; i++)
		sink += i & 1 ? twin_b(i) : twin_a(i);
	for (int i = 0; i < 30; i++)
		sink += i / 3 & 1 ? twin_b(-1) : twin_a(-1);
	for (int depth = 5; depth <= 35; depth += 30) /* a key's line, then a wide key */
		for (int i = 0; i < 24; i++)
			sink += i / 2 & 1 ? twin_d(depth, -1) : twin_c(depth, -1);
	pthread_attr_t attr; /* a stack of its own for far_frame, whatever the main one's limit */
	CHECK(pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, 4u << 20) == 0 &&
		      pthread_create(&t[0], &attr, far_main, NULL) == 0,
	      "thread");
	pthread_join(t[0], NULL);
	same_sp_other_rbp();
	same_site_other_rbp();
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)30) == 0, "thread");
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < 5; i++)
		raise(SIGUSR1);

	static char alt[1 << 16];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
	CHECK(sigaltstack(&ss, NULL) == 0, "sigaltstack");
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR2, &sa, NULL);
	for (int i = 0; i < 5; i++)
		raise(SIGUSR2);
	shapes(5); /* back on the thread's own stack after the handler ran on another */

	notes_write("unwind");
	return 0;
}
