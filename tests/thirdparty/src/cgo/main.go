// tests/thirdparty/src/cgo/main.go: the Go program go.sh runs with and without leek.
//
// Go's own heap never calls malloc, so a pure-Go binary is static and invisible to leek; cgo makes
// it dynamic and puts the C allocator under goroutines that the Go scheduler moves between
// threads, with Go's signals (preemption, SIGURG) arriving in the middle of C code. Eight
// goroutines call C that mallocs, callocs, reallocs and frees, and do pure-Go work (maps, slices,
// SHA-256) in between. The output is a checksum and counts that depend only on the arguments,
// never on scheduling: go.sh compares it with a run without leek. It must never print anything
// that varies from run to run.
//
// Usage: cgomain ROUNDS
package main

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PROBE_SIZE 40000

// probe_malloc makes allocations of PROBE_SIZE bytes and nothing else does: go.sh counts them in
// the profile through this frame. noinline and the empty asm after the call (no tail call) keep
// the frame on the stack.
__attribute__((noinline)) static void *probe_malloc(void)
{
	void *p = malloc(PROBE_SIZE);

	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v;
	return h * 0x100000001b3ull;
}

// churn: one round of C allocation for goroutine `seed`; returns a checksum of what it wrote.
static uint64_t churn(uint64_t seed, int n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ seed, x = seed * 2654435761u + 1;
	void *keep[64] = {0};
	int i;

	for (i = 0; i < n; i++) {
		size_t size;
		unsigned char *p;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size = 1 + x % 4096;
		p = (x & 1) ? malloc(size) : calloc(1, size);
		if (!p)
			return 0;
		if (!(x & 1) && p[size - 1] != 0)
			return 1; // calloc must zero
		memset(p, (int)(x & 0xff), size);
		h = mix(h, p[size / 2]);
		p = realloc(p, size * 3); // grows, often moves
		if (!p)
			return 0;
		h = mix(h, p[size - 1]);
		free(keep[i % 64]);
		keep[i % 64] = p;
	}
	for (i = 0; i < 64; i++)
		free(keep[i]);

	unsigned char *big = probe_malloc();
	if (!big)
		return 0;
	memset(big, (int)(h & 0xff), PROBE_SIZE);
	h = mix(h, big[PROBE_SIZE - 1]);
	free(big);
	return h;
}
*/
import "C"

import (
	"crypto/sha256"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
)

const goroutines = 8

func work(id, rounds int) [32]byte {
	sum := sha256.New()
	for r := 0; r < rounds; r++ {
		c := uint64(C.churn(C.uint64_t(id*100003+r), 256))
		// Pure Go: a map and slices that grow.
		m := map[string]int{}
		var s []string
		for i := 0; i < 500; i++ {
			k := strconv.FormatUint(c+uint64(i)*7919, 36)
			m[k[:2]] += len(k)
			s = append(s, k)
		}
		sort.Strings(s)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(sum, "%d %x %s %s", r, c, s[0], s[len(s)-1])
		for _, k := range keys {
			fmt.Fprintf(sum, "%s=%d;", k, m[k])
		}
	}
	var out [32]byte
	copy(out[:], sum.Sum(nil))
	return out
}

func main() {
	rounds, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "usage: cgomain ROUNDS")
		os.Exit(2)
	}
	sums := make([][32]byte, goroutines)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			sums[id] = work(id, rounds)
		}(g)
	}
	wg.Wait()
	all := sha256.New()
	for _, s := range sums {
		all.Write(s[:])
	}
	fmt.Printf("goroutines %d\n", goroutines)
	fmt.Printf("rounds %d\n", rounds)
	fmt.Printf("probe_allocs %d\n", goroutines*rounds)
	fmt.Printf("probe_size %d\n", C.PROBE_SIZE)
	fmt.Printf("checksum %x\n", all.Sum(nil))
}
