/* test-site.c: which frame is a stack's allocation site, the --focus/--ignore/--alloc-fn filters,
 * site keys, and the small parsers of `leek report` (src/cli/symbols/site.c, report-view.c).
 *
 * Frames are built by hand, as the symbolizer would return them: the function names are the
 * spellings libdw and the demangler produce (demangled with parameters, or mangled when no
 * demangler was found, or glibc's __GI_ aliases).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "harness.h"
#include "profile-sim.h"
#include "report.h"
#include "site.h"
#include "util.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define PROG "/usr/bin/prog"

static struct lk_sym_frame fr(const char *function, const char *module)
{
	return (struct lk_sym_frame){ .function = function, .module = module };
}

static bool alloc(const struct lk_site_filter *f, const char *function, const char *module)
{
	struct lk_sym_frame x = fr(function, module);

	return lk_site_is_allocator(f, &x);
}

TEST(malloc_family_anywhere)
{
	static const char *const names[] = {
		"malloc", "calloc", "realloc", "reallocarray", "memalign", "aligned_alloc",
		"posix_memalign", "valloc", "pvalloc", "__libc_malloc", "__libc_calloc",
		"__GI___libc_malloc", "xmalloc", "xstrdup", "g_malloc0", "g_try_realloc_n",
		"malloc(unsigned long)",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!alloc(NULL, names[i], PROG) || !alloc(NULL, names[i], LIBC) ||
		    !alloc(NULL, names[i], NULL))
			FAIL("%s is not an allocator frame", names[i]);
	}
}

TEST(operator_new_and_std_allocator)
{
	static const char *const names[] = {
		"operator new(unsigned long)",
		"operator new[](unsigned long)",
		"operator new(unsigned long, std::align_val_t)",
		"operator new(unsigned long, std::nothrow_t const&)",
		"operator new",
		"_Znwm", "_Znam", "_ZnwmSt11align_val_t", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
		"std::__new_allocator<int>::allocate(unsigned long, void const*)",
		"__gnu_cxx::new_allocator<char>::allocate(unsigned long, void const*)",
		"std::allocator<int>::allocate(unsigned long)",
		"std::allocator_traits<std::allocator<int> >::allocate(std::allocator<int>&, unsigned long)",
		"__gnu_cxx::__alloc_traits<std::allocator<char>, char>::allocate",
		"_ZNSt15__new_allocatorIiE8allocateEmPKv",
		"std::_Vector_base<int, std::allocator<int> >::_M_allocate(unsigned long)",
		"std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>",
		"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create(unsigned long&, unsigned long)",
		"std::__allocate_guarded<std::allocator<std::_Sp_counted_ptr_inplace<int> > >",
		"__cxa_allocate_exception",
		"void std::_Construct<std::__cxx11::basic_string<char>, int, char>(std::__cxx11::basic_string<char>*, int&&, char&&)",
		"std::shared_ptr<std::enable_if<!std::is_array<int>::value, int>::type> std::make_shared<int>(int&&)",
		"Pool::operator new(unsigned long)",
		"_ZNSt6vectorIiSaIiEE17_M_realloc_insertIJRKiEEEvN9__gnu_cxx17__normal_iteratorIPiS1_EEDpOT_",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!alloc(NULL, names[i], "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"))
			FAIL("%s is not an allocator frame", names[i]);
	/* What merely looks alike is the program's own. */
	ASSERT_TRUE(!alloc(NULL, "operator delete(void*)", PROG));
	ASSERT_TRUE(!alloc(NULL, "_Z3foov", PROG));
	ASSERT_TRUE(!alloc(NULL, "stdio_thing", PROG));
	ASSERT_TRUE(!alloc(NULL, "mystd::vector<int>::push", PROG));
	ASSERT_TRUE(!alloc(NULL, "(anonymous namespace)::std_like()", PROG));
	ASSERT_TRUE(!alloc(NULL, "(anonymous namespace)::f(std::vector<int> const&)", PROG));
	ASSERT_TRUE(!alloc(NULL, "void Cache::put<std::string>(std::string const&)", PROG));
	ASSERT_TRUE(!alloc(NULL, "std_thing::operator newish()", PROG));
	ASSERT_TRUE(!alloc(NULL, "Cache::get() const::{lambda(int)#1}::operator()(int) const", PROG));
}

/* Rust's allocator shims and its standard library's allocating paths, as the symbolizer spells
 * them (legacy mangling demangled, hash dropped, escapes decoded). */
TEST(rust_std_allocation_paths)
{
	static const char *const names[] = {
		"__rust_alloc", "__rust_alloc_zeroed", "__rust_realloc", "__rdl_alloc",
		"__rdl_alloc_zeroed", "__rg_alloc", "alloc::alloc::exchange_malloc",
		"alloc::raw_vec::finish_grow", "alloc::raw_vec::RawVec<T,A>::reserve_for_push",
		"alloc::fmt::format::format_inner", "alloc::string::String::push_str",
		"alloc::boxed::Box<T>::new", "alloc::collections::btree::map::BTreeMap<K,V>::insert",
		"hashbrown::raw::RawTable<T,A>::reserve_rehash", "core::iter::traits::iterator::Iterator::collect",
		"core::ops::function::FnOnce::call_once", "std::collections::hash::map::HashMap<K,V,S>::insert",
		"<alloc::vec::Vec<T,A> as core::clone::Clone>::clone",
		"<alloc::string::String as core::fmt::Write>::write_str",
		"<hashbrown::raw::RawTable<T,A> as core::clone::Clone>::clone",
		"hashbrown::rustc_entry::<impl hashbrown::map::HashMap<K,V,S,A>>::rustc_entry",
		"<&mut W as core::fmt::Write>::write_str", "<T as alloc::borrow::ToOwned>::to_owned",
		"<[T] as alloc::slice::hack::ConvertVec>::to_vec",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!alloc(NULL, names[i], PROG))
			FAIL("%s is not an allocator frame", names[i]);
	/* The program's own code, and C++ namespaces that happen to be called alloc or core. */
	ASSERT_TRUE(!alloc(NULL, "rustmain::work", PROG));
	ASSERT_TRUE(!alloc(NULL, "<rustmain::Pool as core::clone::Clone>::clone", PROG));
	ASSERT_TRUE(!alloc(NULL, "<P as rustmain::Store>::put", PROG));
	ASSERT_TRUE(!alloc(NULL, "<Pool as core::clone::Clone>::clone", PROG));
	ASSERT_TRUE(!alloc(NULL, "rustmain::work::{{closure}}", PROG));
	ASSERT_TRUE(!alloc(NULL, "core::Engine::allocate(unsigned long)", PROG));
	ASSERT_TRUE(!alloc(NULL, "alloc::Arena::grow(unsigned long)", PROG));
}

TEST(libc_helpers_only_in_libc)
{
	static const char *const names[] = {
		"strdup", "__strdup", "__GI___strdup", "strndup", "asprintf", "__vasprintf_internal",
		"getline", "getdelim", "open_memstream", "realpath", "_int_malloc",
		"__libc_scratch_buffer_grow", "__libc_dynarray_emplace_enlarge",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!alloc(NULL, names[i], LIBC))
			FAIL("%s in libc is not an allocator frame", names[i]);
		if (alloc(NULL, names[i], PROG))
			FAIL("the program's own %s is an allocator frame", names[i]);
	}
	ASSERT_TRUE(alloc(NULL, "strdup", "/lib/x86_64-linux-gnu/libc-2.31.so"));
	ASSERT_TRUE(!alloc(NULL, "strdup", "/lib/x86_64-linux-gnu/libcrypt.so.1"));
}

TEST(not_allocators)
{
	static const char *const names[] = {
		"main", "__libc_start_main", "__libc_start_call_main", "start_thread", "my_malloc",
		"malloc_trim", "mallocx_wrapper", "free", "_IO_file_doallocate", "libc.so.6+0x1a2b",
		"0x7f001234",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (alloc(NULL, names[i], LIBC))
			FAIL("%s is an allocator frame", names[i]);
}

TEST(alloc_fn_adds_wrappers)
{
	struct lk_site_filter f = {};
	char err[128];

	ASSERT_TRUE(!alloc(&f, "my_alloc", PROG));
	ASSERT_OK(lk_site_filter_add(&f, LK_SITE_ALLOC_FN, "^my_alloc$", err, sizeof(err)));
	ASSERT_OK(lk_site_filter_add(&f, LK_SITE_ALLOC_FN, "^pool::get", err, sizeof(err)));
	ASSERT_TRUE(alloc(&f, "my_alloc", PROG));
	ASSERT_TRUE(!alloc(&f, "my_alloc2", PROG));
	ASSERT_TRUE(alloc(&f, "pool::get(unsigned long)", PROG));
	ASSERT_TRUE(alloc(&f, "malloc", PROG)); /* the built-in list stays */
	lk_site_filter_done(&f);
	ASSERT_TRUE(!alloc(&f, "my_alloc", PROG));
}

/* The wrappers of well-known libraries, in any module (allocators.c says why each is there). */
TEST(library_wrappers)
{
	static const char *const names[] = {
		"xmalloc", "xcalloc", "xrealloc", "xstrdup", "xmemdup", "xmemdupz", "xstrfmt",
		"x2nrealloc", "xpalloc",
		"g_malloc", "g_malloc0", "g_realloc", "g_try_malloc", "g_try_malloc0_n", "g_malloc_n",
		"g_slice_alloc", "g_slice_alloc0", "g_strdup", "g_strdup_printf", "g_memdup2",
		"PyMem_Malloc", "PyMem_Calloc", "PyMem_Realloc", "PyMem_RawMalloc", "PyMem_RawCalloc",
		"PyMem_RawRealloc", "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc",
		"_PyObject_Malloc", "_PyMem_RawMalloc", "_PyMem_DebugRawAlloc", "_PyMem_DebugMalloc",
		"_PyObject_GC_New", "_PyObject_GC_NewVar", "PyType_GenericAlloc", "pymalloc_alloc",
		"sqlite3_malloc", "sqlite3_malloc64", "sqlite3_realloc64", "sqlite3Malloc",
		"sqlite3MallocZero", "sqlite3Realloc", "sqlite3DbMallocRaw", "sqlite3DbMallocRawNN",
		"sqlite3DbMallocZero", "sqlite3DbRealloc", "sqlite3MemMalloc", "sqlite3DbStrDup",
		"sqlite3MPrintf",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!alloc(NULL, names[i], PROG) || !alloc(NULL, names[i], "/usr/lib/libx.so.1"))
			FAIL("%s is not an allocator frame", names[i]);
	/* Their neighbours allocate as part of their own work: sites. */
	static const char *const not[] = {
		"g_strsplit", "g_hash_table_insert", "PyList_New", "PyUnicode_New", "list_resize",
		"sqlite3BtreeInsert", "sqlite3VdbeExec", "sqlite3_prepare_v2", "gc_alloc",
		"xmalloc_wrapper", "PyMem_Free", "sqlite3_free",
	};
	for (size_t i = 0; i < sizeof(not) / sizeof(not[0]); i++)
		if (alloc(NULL, not[i], PROG))
			FAIL("%s is an allocator frame", not[i]);
}

/* --alloc-fn (and --focus, --ignore) MODULE+0xOFFSET: the frame at that offset of that module,
 * as the symbolizer names a frame without a symbol, whether or not it has one; any other
 * pattern is a regex, and a regex over such a name works as over any other. */
TEST(alloc_fn_by_location)
{
	const char *sqlite = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0";
	struct lk_sym_frame nosym = { .function = "libsqlite3.so.0+0xa7503", .module = sqlite,
				      .offset = 0xa7503 },
			    named = nosym, next = nosym, other = nosym,
			    cxx = { .function = "libstdc++.so.6+0x9a1b2",
				    .module = "/usr/lib/libstdc++.so.6", .offset = 0x9a1b2 };
	const struct lk_sym_frame *stack[] = { &nosym, &next, &cxx };
	struct lk_site_filter f = {};

	named.function = "sqlite3MemMalloc_with_debug_info";
	next.function = "libsqlite3.so.0+0xa7504";
	next.offset = 0xa7504;
	other.module = "/opt/libsqlite3.so.0.old";
	ASSERT_TRUE(!lk_site_is_allocator(&f, &nosym));
	ASSERT_OK(lk_site_filter_add(&f, LK_SITE_ALLOC_FN, "libsqlite3.so.0+0xa7503", NULL, 0));
	ASSERT_TRUE(f.rules[LK_SITE_ALLOC_FN][0].location);
	ASSERT_TRUE(lk_site_is_allocator(&f, &nosym));
	ASSERT_TRUE(lk_site_is_allocator(&f, &named));   /* the address, whatever its name */
	ASSERT_TRUE(!lk_site_is_allocator(&f, &next));   /* one byte on */
	ASSERT_TRUE(!lk_site_is_allocator(&f, &other));  /* another file */
	ASSERT_EQ(lk_site_pick(&f, stack, 3), 1);
	lk_site_filter_done(&f);

	/* A path, upper-case hex digits, and a module whose name holds a '+'. */
	ASSERT_OK(lk_site_filter_add(&f, LK_SITE_ALLOC_FN,
				     "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0+0xA7503", NULL, 0));
	ASSERT_OK(lk_site_filter_add(&f, LK_SITE_ALLOC_FN, "libstdc++.so.6+0x9a1b2", NULL, 0));
	ASSERT_TRUE(lk_site_is_allocator(&f, &nosym));
	ASSERT_TRUE(!lk_site_is_allocator(&f, &other));
	ASSERT_TRUE(lk_site_is_allocator(&f, &cxx));
	lk_site_filter_done(&f);

	/* Not a location: a regex, which a symbol-less frame's name can match too. */
	ASSERT_OK(lk_site_filter_add(&f, LK_SITE_ALLOC_FN, "^libsqlite3\\.so\\.0\\+0xa750[0-9]$",
				     NULL, 0));
	ASSERT_TRUE(!f.rules[LK_SITE_ALLOC_FN][0].location);
	ASSERT_TRUE(lk_site_is_allocator(&f, &nosym));
	ASSERT_TRUE(lk_site_is_allocator(&f, &next));
	ASSERT_TRUE(!lk_site_is_allocator(&f, &named));
	lk_site_filter_done(&f);
	static const char *const regexes[] = { "lib.so+0x", "lib.so+0x12g", "lib.so+0x1 ",
					       "lib.so+0x11111111111111111" };
	for (size_t i = 0; i < sizeof(regexes) / sizeof(regexes[0]); i++) {
		ASSERT_OK(lk_site_filter_add(&f, LK_SITE_ALLOC_FN, regexes[i], NULL, 0));
		ASSERT_TRUE(!f.rules[LK_SITE_ALLOC_FN][i].location);
	}
	lk_site_filter_done(&f);

	/* --focus by location. */
	ASSERT_OK(lk_site_filter_add(&f, LK_SITE_FOCUS, "libstdc++.so.6+0x9a1b2", NULL, 0));
	ASSERT_TRUE(lk_site_wanted(&f, stack, 3));
	ASSERT_TRUE(!lk_site_wanted(&f, stack, 2));
	lk_site_filter_done(&f);
}

TEST(bad_regex)
{
	struct lk_site_filter f = {};
	char err[128] = "";

	ASSERT_EQ(lk_site_filter_add(&f, LK_SITE_FOCUS, "(unclosed", err, sizeof(err)), -EINVAL);
	ASSERT_TRUE(err[0] != 0);
	ASSERT_EQ(f.n[LK_SITE_FOCUS], 0);
	ASSERT_EQ(lk_site_filter_add(&f, 7, "x", NULL, 0), -EINVAL);
	lk_site_filter_done(&f);
}

TEST(pick_skips_allocator_frames)
{
	struct lk_sym_frame a = fr("operator new(unsigned long)", "/usr/lib/libstdc++.so.6"),
			    b = fr("std::__new_allocator<int>::allocate(unsigned long, void const*)",
				   PROG),
			    c = fr("Cache::put(int)", PROG), d = fr("main", PROG),
			    m = fr("malloc", LIBC), s = fr("__strdup", LIBC), u = fr("wrap", PROG);
	const struct lk_sym_frame *stack[] = { &a, &b, &c, &d };
	const struct lk_sym_frame *all_alloc[] = { &m, &a, &s };
	const struct lk_sym_frame *strdup_then_user[] = { &s, &u, &d };
	struct lk_site_filter f = {};

	b.inlined = true;
	ASSERT_EQ(lk_site_pick(NULL, stack, 4), 2);
	ASSERT_EQ(lk_site_pick(NULL, stack + 2, 2), 0);
	ASSERT_EQ(lk_site_pick(NULL, all_alloc, 3), 0); /* nothing else: the innermost frame */
	ASSERT_EQ(lk_site_pick(NULL, strdup_then_user, 3), 1);
	ASSERT_OK(lk_site_filter_add(&f, LK_SITE_ALLOC_FN, "^wrap$", NULL, 0));
	ASSERT_EQ(lk_site_pick(&f, strdup_then_user, 3), 2);
	lk_site_filter_done(&f);
}

TEST(focus_and_ignore)
{
	struct lk_sym_frame a = fr("malloc", LIBC), b = fr("parse_request", PROG),
			    c = fr("plugin_init", "/opt/x/libplugin.so.2"), d = fr("main", PROG);
	const struct lk_sym_frame *one[] = { &a, &b, &d }, *two[] = { &a, &c, &d };
	struct lk_site_filter f = {};

	ASSERT_TRUE(lk_site_wanted(NULL, one, 3));
	ASSERT_TRUE(lk_site_wanted(&f, one, 3));

	ASSERT_OK(lk_site_filter_add(&f, LK_SITE_FOCUS, "^parse_", NULL, 0));
	ASSERT_TRUE(lk_site_wanted(&f, one, 3));
	ASSERT_TRUE(!lk_site_wanted(&f, two, 3));
	/* Several focus patterns: any of them. Modules match by path or by file name. */
	ASSERT_OK(lk_site_filter_add(&f, LK_SITE_FOCUS, "^libplugin\\.so", NULL, 0));
	ASSERT_TRUE(lk_site_wanted(&f, two, 3));
	lk_site_filter_done(&f);

	ASSERT_OK(lk_site_filter_add(&f, LK_SITE_IGNORE, "/opt/", NULL, 0));
	ASSERT_TRUE(lk_site_wanted(&f, one, 3));
	ASSERT_TRUE(!lk_site_wanted(&f, two, 3));
	/* ignore wins over focus */
	ASSERT_OK(lk_site_filter_add(&f, LK_SITE_FOCUS, "main", NULL, 0));
	ASSERT_TRUE(!lk_site_wanted(&f, two, 3));
	ASSERT_TRUE(lk_site_wanted(&f, one, 3));
	lk_site_filter_done(&f);
}

TEST(site_keys)
{
	char fn[] = "parse", file[] = "/src/p.c", mod[] = "/usr/bin/prog";
	struct lk_sym_frame a = { .function = "parse", .file = "/src/p.c", .line = 10,
				  .module = "/usr/bin/prog", .offset = 1 },
			    b = { .function = fn, .file = file, .line = 10, .module = mod,
				  .offset = 2, .inlined = true },
			    c = a, d = a, e = a;

	ASSERT_EQ(lk_site_key_compare(&a, &b), 0); /* strings compared, offset ignored */
	ASSERT_EQ(lk_site_key_hash(&a), lk_site_key_hash(&b));
	c.line = 11;
	ASSERT_TRUE(lk_site_key_compare(&a, &c) < 0);
	d.file = NULL;
	ASSERT_TRUE(lk_site_key_compare(&a, &d) != 0);
	ASSERT_TRUE(lk_site_key_hash(&a) != lk_site_key_hash(&d));
	e.file = "";
	ASSERT_TRUE(lk_site_key_compare(&d, &e) != 0); /* NULL is not "" */
	ASSERT_TRUE(lk_site_key_hash(&d) != lk_site_key_hash(&e));
	e = a;
	e.module = "/usr/bin/other";
	ASSERT_TRUE(lk_site_key_compare(&a, &e) != 0);
	ASSERT_STREQ(lk_site_basename("/a/b/libc.so.6"), "libc.so.6");
	ASSERT_STREQ(lk_site_basename("prog"), "prog");
	ASSERT_STREQ(lk_site_basename(NULL), "");
}

TEST(durations)
{
	uint64_t v = 0;

	ASSERT_OK(lk_parse_duration("1.5", &v));
	ASSERT_EQ(v, 1500000000);
	ASSERT_OK(lk_parse_duration("250ms", &v));
	ASSERT_EQ(v, 250000000);
	ASSERT_OK(lk_parse_duration("2m", &v));
	ASSERT_EQ(v, 120000000000);
	ASSERT_OK(lk_parse_duration("90s", &v));
	ASSERT_EQ(v, 90000000000);
	ASSERT_OK(lk_parse_duration("1h", &v));
	ASSERT_EQ(v, 3600000000000);
	ASSERT_OK(lk_parse_duration("10us", &v));
	ASSERT_EQ(v, 10000);
	ASSERT_OK(lk_parse_duration("7ns", &v));
	ASSERT_EQ(v, 7);
	ASSERT_OK(lk_parse_duration(".5s", &v));
	ASSERT_EQ(v, 500000000);
	ASSERT_OK(lk_parse_duration("0", &v));
	ASSERT_EQ(v, 0);
	ASSERT_EQ(lk_parse_duration("", &v), -EINVAL);
	ASSERT_EQ(lk_parse_duration("-1", &v), -EINVAL);
	ASSERT_EQ(lk_parse_duration("1x", &v), -EINVAL);
	ASSERT_EQ(lk_parse_duration("s", &v), -EINVAL);
	ASSERT_EQ(lk_parse_duration("inf", &v), -EINVAL);
	ASSERT_EQ(lk_parse_duration("nan", &v), -EINVAL);
	ASSERT_EQ(lk_parse_duration("1 s", &v), -EINVAL);
	ASSERT_EQ(lk_parse_duration("1e300h", &v), -ERANGE);
}

/* lk_duration_arg(command, option, arg, min_ns): its exit status, *ret, and the line it prints
 * (into buf). */
static int duration_arg(const char *arg, uint64_t min_ns, uint64_t *ret, char *buf, size_t size)
{
	FILE *f = tmpfile();
	int saved = dup(2), k;

	ASSERT_TRUE(f != NULL && saved >= 0);
	fflush(stderr);
	ASSERT_TRUE(dup2(fileno(f), 2) == 2);
	k = lk_duration_arg("cmd", "--opt", arg, min_ns, ret);
	fflush(stderr);
	ASSERT_TRUE(dup2(saved, 2) == 2);
	close(saved);
	rewind(f);
	buf[fread(buf, 1, size - 1, f)] = 0;
	fclose(f);
	return k;
}

TEST(duration_args)
{
	char msg[256];
	uint64_t v = 7;

	ASSERT_EQ(duration_arg("1s", 1000000000, &v, msg, sizeof(msg)), 0);
	ASSERT_EQ(v, 1000000000);
	ASSERT_STREQ(msg, "");
	ASSERT_EQ(duration_arg("0", 0, &v, msg, sizeof(msg)), 0);
	ASSERT_EQ(v, 0);
	v = 7;
	ASSERT_EQ(duration_arg("soon", 0, &v, msg, sizeof(msg)), LK_EXIT_USAGE);
	ASSERT_EQ(v, 7); /* filled only on success */
	ASSERT_STREQ(msg, "leek: cmd: --opt 'soon': not a duration (e.g. 500ms, 30s, 10m)\n");
	ASSERT_EQ(duration_arg("999ms", 1000000000, &v, msg, sizeof(msg)), LK_EXIT_USAGE);
	ASSERT_EQ(v, 7);
	ASSERT_STREQ(msg, "leek: cmd: --opt '999ms': too short (at least 1s)\n");
	/* The least in its largest whole unit. */
	ASSERT_EQ(duration_arg("0", 1, &v, msg, sizeof(msg)), LK_EXIT_USAGE);
	ASSERT_STREQ(msg, "leek: cmd: --opt '0': too short (at least 1ns)\n");
	ASSERT_EQ(duration_arg("0", 1000000, &v, msg, sizeof(msg)), LK_EXIT_USAGE);
	ASSERT_STREQ(msg, "leek: cmd: --opt '0': too short (at least 1ms)\n");
	ASSERT_EQ(duration_arg("1m", 1500000000, &v, msg, sizeof(msg)), 0);
	ASSERT_EQ(duration_arg("1s", 1500000000, &v, msg, sizeof(msg)), LK_EXIT_USAGE);
	ASSERT_STREQ(msg, "leek: cmd: --opt '1s': too short (at least 1500ms)\n");
	ASSERT_EQ(duration_arg("1m", 7200000000000, &v, msg, sizeof(msg)), LK_EXIT_USAGE);
	ASSERT_STREQ(msg, "leek: cmd: --opt '1m': too short (at least 2h)\n");
	ASSERT_EQ(v, 60000000000);
}

TEST(view_names)
{
	ASSERT_EQ(lk_view_from_name("leaks"), LK_VIEW_LEAKS);
	ASSERT_EQ(lk_view_from_name("timeline"), LK_VIEW_TIMELINE);
	ASSERT_EQ(lk_view_from_name("Leaks"), -EINVAL);
	ASSERT_EQ(lk_view_from_name(""), -EINVAL);
	for (unsigned v = 0; v < _LK_VIEW_MAX; v++)
		ASSERT_EQ(lk_view_from_name(lk_view_name(v)), v);
	ASSERT_STREQ(lk_trend_name(LK_TREND_GROWING), "growing");
	ASSERT_STREQ(lk_trend_name(LK_TREND_PLATEAU), "plateau");
	ASSERT_STREQ(lk_trend_name(LK_TREND_FLAT), "flat");
	ASSERT_STREQ(lk_trend_name(LK_TREND_UNKNOWN), "unknown");
}

/* Addresses no module covers become frames named by their address, shared between stacks and
 * kept until the end; a stack without frames is "(no stack)". */
TEST(symbolize_without_modules)
{
	static const uint64_t frames[] = { 0x401234, 0x7f0000001000, 0x401234 };
	static const uint64_t none[] = { 0, 0, 0 }, unknown[] = { 9, 9, 9 };
	struct lk_symbolizer *sym = NULL;
	struct lk_site_stack st;
	const struct lk_sym_frame *first;

	ASSERT_OK(lk_symbolizer_new(&sym));
	lk_site_stack_init(&st);
	ASSERT_OK(lk_site_symbolize(&st, sym, 0, frames, none, 3));
	ASSERT_EQ(st.n, 3);
	ASSERT_STREQ(st.frames[0]->function, "0x401234");
	ASSERT_STREQ(st.frames[1]->function, "0x7f0000001000");
	ASSERT_TRUE(st.frames[0] == st.frames[2]);
	ASSERT_TRUE(st.frames[0]->module == NULL && st.frames[0]->file == NULL);
	first = st.frames[0];
	ASSERT_OK(lk_site_symbolize(&st, sym, 0, frames, unknown, 2)); /* -ENOENT: no module 9 */
	ASSERT_EQ(st.n, 2);
	ASSERT_TRUE(st.frames[0] == first);
	ASSERT_OK(lk_site_symbolize(&st, sym, 0, NULL, NULL, 0));
	ASSERT_EQ(st.n, 1);
	ASSERT_STREQ(st.frames[0]->function, "(no stack)");
	lk_site_stack_trim(&st);
	ASSERT_STREQ(first->function, "0x401234"); /* still valid */
	lk_site_stack_done(&st);
	lk_symbolizer_free(sym);
}

/* `leek run`'s summary ranks only the stacks with something in the view (shown_only), and must
 * rank the same sites, with the same figures and shares, as `leek report` does with every stack:
 * here 30 stacks on 15 sites, each site with a stack that still holds blocks at the end and
 * one whose blocks are all freed, and 5 sites with nothing live at all. */
TEST(shown_only_ranks_the_same)
{
	struct lk_report *all = NULL, *shown = NULL;
	struct lk_symbolizer *sym = NULL;
	struct lk_profile *p = NULL;
	uint64_t stack[30], t = 0;
	char *err = NULL;
	struct sim s;

	sim_start(&s, 1, LK_HDR_EXACT);
	for (int i = 0; i < 30; i++) {
		uint64_t site = 0x401000 + 0x40 * (uint64_t)(i % 15);
		uint64_t frames[2] = { site, 0x402000 + (uint64_t)i };
		stack[i] = sim_stack(&s, frames, 2);
	}
	for (uint64_t k = 0; k < 3000; k++) {
		int i = (int)(k * 7 % 30);
		uint64_t addr = 0x100000 + 0x100 * k;
		sim_alloc(&s, ++t, addr, 1 + k % 997, stack[i]);
		if (i >= 10 || (k / 30) % 2) /* kept: half the blocks of sites 0-9's first stacks */
			sim_free(&s, ++t, addr);
	}
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	ASSERT_OK(lk_symbolizer_new(&sym));
	for (int pass = 0; pass < 2; pass++) {
		const struct lk_report_opts o = { .view = LK_VIEW_LEAKS, .shown_only = pass == 1 };
		struct lk_report **r = pass ? &shown : &all;
		ASSERT_OK(lk_report_new(&o, r));
		ASSERT_OK(lk_report_add(*r, sym, 0, "x.lk", p, NULL));
		ASSERT_OK(lk_report_finish(*r, NULL));
	}
	ASSERT_EQ(all->nsites, 10);
	ASSERT_EQ(shown->nsites, all->nsites);
	ASSERT_EQ(shown->sites_total, all->sites_total);
	ASSERT_EQ(shown->view_bytes.value, all->view_bytes.value);
	ASSERT_EQ(shown->totals.live_bytes_end.value, all->totals.live_bytes_end.value);
	for (size_t i = 0; i < all->nsites; i++) {
		const struct lk_report_site *a = &all->sites[i], *b = &shown->sites[i];
		ASSERT_STREQ(a->stack[a->site_frame]->function, b->stack[b->site_frame]->function);
		ASSERT_STREQ(a->stack[1]->function, b->stack[1]->function); /* the heaviest stack */
		ASSERT_EQ(a->live_bytes.value, b->live_bytes.value);
		ASSERT_EQ(a->live_bytes.lo, b->live_bytes.lo);
		ASSERT_EQ(a->live_objects.value, b->live_objects.value);
		ASSERT_EQ(a->share, b->share);
		ASSERT_EQ(a->nstacks, 2);
		ASSERT_EQ(b->nstacks, 1); /* the other one held nothing at the end */
	}
	lk_report_free(all);
	lk_report_free(shown);
	lk_symbolizer_free(sym);
	lk_profile_free(p);
	free(s.b.p);
}

/* A report's sites, their stacks and the synthetic frames of addresses no module covers are taken
 * from the memory budget (budget.h), as the profile's tables are: 5000 stacks of 8 frames that no
 * module covers make 40000 synthetic frames and 5000 sites. Beyond the limit lk_report_add fails
 * with -E2BIG and says so; whatever it took is given back when the report is freed, after
 * lk_report_finish() has dropped the sites past --top as before it. */
TEST(report_takes_from_the_budget)
{
	struct lk_symbolizer *sym = NULL;
	struct lk_report *r = NULL;
	struct lk_profile *p = NULL;
	const struct lk_report_opts o = { .view = LK_VIEW_LEAKS, .top = 10 };
	uint64_t loaded;
	char *err = NULL, want[96], limit[32];
	struct sim s;

	sim_start(&s, 1, LK_HDR_EXACT);
	for (uint64_t i = 0; i < 5000; i++) {
		uint64_t frames[8];
		for (uint64_t f = 0; f < 8; f++)
			frames[f] = 0x400000 + 0x10 * (8 * i + f);
		sim_stack(&s, frames, 8);
		sim_alloc(&s, i + 1, 0x100000 + 0x100 * i, 100, i + 1);
	}
	ASSERT_OK(sim_load(&s, NULL, &p, &err));
	ASSERT_OK(lk_symbolizer_new(&sym));
	loaded = lk_budget_used();

	ASSERT_OK(lk_report_new(&o, &r));
	ASSERT_OK(lk_report_add(r, sym, 0, "x.lk", p, &err));
	ASSERT_TRUE(lk_budget_used() > loaded + 40000 * 64);
	ASSERT_OK(lk_report_finish(r, NULL));
	ASSERT_EQ(r->nsites, 10);
	lk_report_free(r);
	ASSERT_EQ(lk_budget_used(), loaded);

	lk_budget_set_limit(loaded + 1024 * 1024);
	ASSERT_OK(lk_report_new(&o, &r));
	ASSERT_EQ(lk_report_add(r, sym, 0, "x.lk", p, &err), -E2BIG);
	snprintf(want, sizeof(want), "the profile needs more than %s of memory to report "
		 "(--max-memory; ", lk_budget_format(limit, sizeof(limit), loaded + 1024 * 1024));
	ASSERT_CONTAINS(err, want);
	ASSERT_CONTAINS(err, " sites so far)");
	ASSERT_TRUE(lk_budget_used() <= loaded + 1024 * 1024); /* never more than the limit */
	lk_report_free(r);
	ASSERT_EQ(lk_budget_used(), loaded);
	lk_profile_free(p);
	ASSERT_EQ(lk_budget_used(), 0);
	lk_symbolizer_free(sym);
	free(err);
	free(s.b.p);
}
