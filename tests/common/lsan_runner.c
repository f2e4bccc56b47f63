/* Linked into every Criterion test binary. In the sanitized build it keeps
 * LeakSanitizer's attention on the tests themselves: Criterion's runner
 * process leaks a small record of its own when tests overlap under --jobs
 * (Snaipe/Criterion#113, #132), which would fail a suite whose tests all
 * passed. So the runner ignores what its main thread allocates, while each
 * test's process (BoxFort runs every test in a child that has BXFI_MAP in
 * its environment) stays fully checked; scripts/run-tests.sh fails a suite
 * whose output has a leak report. No effect without ASan. */
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>

__attribute__((constructor)) static void rb_test_runner_lsan(void)
{
    if (!getenv("BXFI_MAP"))
        __lsan_disable();
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int rb_test_runner_lsan_unused;
#endif
