/* harness.h: leek's small test harness (systemd's test tables, PipeWire's pwtest).
 *
 * TEST(name) { ... } defines a test and registers it in the ELF section "lk_tests"; the harness's
 * main() runs every test (or those whose name contains argv's filter) in a forked child, so a
 * crash, an abort or a hang (alarm) fails that test alone and names the signal. --no-fork runs
 * them in-process, for gdb. It ends by printing exactly one line, "N passed, N failed, N skipped",
 * and exits non-zero if anything failed. A skipped test (SKIP) is neither passed nor failed.
 *
 * A failed ASSERT_* prints file:line and both values, then leaves the test (longjmp): code after
 * a failed assertion never runs, so it must not be relied on to free anything. Tests must never
 * depend on each other's order or state.
 */
#ifndef LEEK_HARNESS_H
#define LEEK_HARNESS_H

#include <stdbool.h>

struct lk_test {
	const char *name;
	void (*fn)(void);
};

_Noreturn void lk_test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Leaves the test as skipped, saying why: for a test that cannot run here (no root, a tool
 * missing, a file system without the feature), which must never count as passed. */
_Noreturn void lk_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define SKIP(...) lk_test_skip(__VA_ARGS__)
/* Fails the test here with a message, as a failed ASSERT_* does: for checks that say more than
 * ASSERT_* can. */
#define FAIL(...) lk_test_fail(__FILE__, __LINE__, __VA_ARGS__)

/* Pointers, not structs, go in the section: the linker packs 8-byte pointers with no padding
 * between them, whatever alignment the compiler picks for larger objects. */
#define TEST(n)                                                                                    \
	static void test_##n(void);                                                                \
	static const struct lk_test lk_test_##n = { #n, test_##n };                                \
	static const struct lk_test *const lk_test_ptr_##n                                         \
		__attribute__((used, section("lk_tests"), aligned(sizeof(void *)))) =              \
			&lk_test_##n;                                                              \
	static void test_##n(void)

#define ASSERT_TRUE(x)                                                                             \
	do {                                                                                       \
		if (!(x))                                                                          \
			lk_test_fail(__FILE__, __LINE__, "%s is false", #x);                       \
	} while (0)

#define ASSERT_EQ(a, b)                                                                            \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a != _b)                                                                      \
			lk_test_fail(__FILE__, __LINE__, "%s == %s: %lld (%#llx) != %lld (%#llx)", \
				     #a, #b, _a, (unsigned long long)_a, _b,                       \
				     (unsigned long long)_b);                                      \
	} while (0)

/* r is a negative errno or a non-negative success. */
#define ASSERT_OK(r)                                                                               \
	do {                                                                                       \
		long long _r = (long long)(r);                                                     \
		if (_r < 0)                                                                        \
			lk_test_fail(__FILE__, __LINE__, "%s: %lld (%s)", #r, _r,                  \
				     lk_test_strerror((int)-_r));                                  \
	} while (0)

#define ASSERT_STREQ(a, b)                                                                         \
	do {                                                                                       \
		const char *_a = (a), *_b = (b);                                                   \
		if (!lk_test_streq(_a, _b))                                                        \
			lk_test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,     \
				     _a ? _a : "(null)", _b ? _b : "(null)");                      \
	} while (0)

/* a contains b. */
#define ASSERT_CONTAINS(a, b)                                                                      \
	do {                                                                                       \
		const char *_a = (a), *_b = (b);                                                   \
		if (!_a || !_b || !lk_test_contains(_a, _b))                                       \
			lk_test_fail(__FILE__, __LINE__, "\"%s\" does not contain \"%s\"",         \
				     _a ? _a : "(null)", _b ? _b : "(null)");                      \
	} while (0)

#define ASSERT_NEAR(a, b, eps)                                                                     \
	do {                                                                                       \
		double _a = (double)(a), _b = (double)(b), _e = (double)(eps);                     \
		if (!(_a - _b <= _e && _b - _a <= _e))                                             \
			lk_test_fail(__FILE__, __LINE__,                                           \
				     "%s ~ %s: %.17g and %.17g differ by more than %g", #a, #b,    \
				     _a, _b, _e);                                                  \
	} while (0)

bool lk_test_streq(const char *a, const char *b);
bool lk_test_contains(const char *a, const char *b);
const char *lk_test_strerror(int e);

#endif /* LEEK_HARNESS_H */
