/* cxx.cc: C++ allocation reaches leek through libstdc++.
 *
 * new/delete, new[]/delete[], aligned new (which libstdc++ turns into aligned_alloc) and container
 * growth, at sizes libc never asks for, with the tallies printed (tally.h) so that the driver can
 * find every one of them in an exact-mode profile, with a stack through libstdc++.
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <unistd.h>

#define CHECK(cond, what)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			std::fprintf(stderr, "%s:%d: check failed: %s: %s\n", __FILE__, __LINE__, \
				     #cond, what);                                                 \
			std::exit(1);                                                              \
		}                                                                                  \
	} while (0)

namespace {

struct Obj {
	char c[7777];
};

struct alignas(64) Big {
	char c[6400];
};

struct alignas(4096) Page {
	char c[12288];
};

void tally(std::size_t size, unsigned long allocs, unsigned long frees)
{
	std::printf("tally %ld %zu %lu 0 %lu\n", static_cast<long>(getpid()), size, allocs, frees);
}

} // namespace

int main()
{
	const int n = 10;
	char *arr[n];
	Obj *objs[n];
	Big *bigs[n];

	for (int i = 0; i < n; i++) {
		arr[i] = new char[77777];
		std::memset(arr[i], i, 77777);
		objs[i] = new Obj;
		std::memset(objs[i]->c, i, sizeof(objs[i]->c));
		bigs[i] = new Big;
		CHECK(reinterpret_cast<std::uintptr_t>(bigs[i]) % 64 == 0, "aligned new: misaligned");
		std::memset(bigs[i]->c, i, sizeof(bigs[i]->c));
	}
	for (int i = 0; i < n; i++) {
		delete[] arr[i];
		if (i % 2)
			delete objs[i]; /* half of them stay live */
		delete bigs[i];
	}
	Big *row = new Big[3];
	CHECK(reinterpret_cast<std::uintptr_t>(row) % 64 == 0, "aligned new[]: misaligned");
	delete[] row;
	Page *page = new Page;
	CHECK(reinterpret_cast<std::uintptr_t>(page) % 4096 == 0, "new of a 4096-aligned type");
	delete page;

	std::vector<std::uint64_t> v;
	v.reserve(12345);
	for (std::uint64_t i = 0; i < 100000; i++)
		v.push_back(i);
	std::string s;
	for (int i = 0; i < 5000; i++)
		s += "leek";
	CHECK(s.size() == 20000 && v[99999] == 99999, "containers");

	tally(77777, n, n);
	tally(sizeof(Obj), n, n / 2);
	tally(sizeof(Big), n, n);
	tally(3 * sizeof(Big), 1, 1);
	tally(sizeof(Page), 1, 1);
	tally(12345 * sizeof(std::uint64_t), 1, 1);
	return 0;
}
