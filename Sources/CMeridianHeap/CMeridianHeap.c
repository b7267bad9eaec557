// What the benchmarks read of the allocator: the bytes in use, where the resident set also counts memory freed and
// kept by the allocator for later (`meridian-bench sync`'s heap figure).
#include "CMeridianHeap.h"

#if defined(__linux__)
#include <malloc.h>
#endif

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
size_t meridian_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}
#else
size_t meridian_heap_in_use(void) { return 0; }
#endif

#if defined(__GLIBC__)
void meridian_heap_trim(void) { malloc_trim(0); }
#else
void meridian_heap_trim(void) {}
#endif
