// `readdir` for every program that starts child processes with Foundation's `Process` (the test bundle, the
// benchmarks, the checker, the fuzzer): it hands out a whole `struct dirent`, not a pointer into glibc's buffer.
//
// Why: swift-corelibs-foundation's `Process.run()` (Swift 6.3.1, before its pull request #5472) finds the highest
// open descriptor by reading /proc/self/fd with `readdir` and copies each entry's whole 256-byte `d_name`. glibc
// returns records of `d_reclen` bytes (24 for a small number) packed in its read buffer, so the copy of the last
// record of a full buffer reads past the buffer's end, and faults when the next page is unmapped: the test process
// died with "Bad pointer dereference" in `Process.run()` now and then, with many descriptors open (a full buffer).
//
// This definition, linked into the executable, comes before libc's in the dynamic linker's search, so Foundation's
// calls land here: libc's `readdir` (found with `dlsym(RTLD_NEXT, …)`) reads the record, which is copied into a
// whole `struct dirent` (the rest zeroed) of a small per-thread ring. The pointer stays valid for the next 15 calls
// on the thread: longer than POSIX asks (until the next call on the same stream) whenever one stream is read at a
// time, as every caller in these programs does.
#if defined(__linux__)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "CMeridianProcessIO.h"

enum { meridian_dirent_copies = 16 };
static __thread struct dirent meridian_dirents[meridian_dirent_copies];
static __thread unsigned meridian_next_dirent;

typedef struct dirent *(*meridian_readdir_function)(DIR *);

static meridian_readdir_function meridian_libc_readdir(void) {
    static meridian_readdir_function found;
    meridian_readdir_function function = __atomic_load_n(&found, __ATOMIC_ACQUIRE);
    if (function == NULL) {
        function = (meridian_readdir_function)dlsym(RTLD_NEXT, "readdir");
        __atomic_store_n(&found, function, __ATOMIC_RELEASE);
    }
    return function;
}

struct dirent *readdir(DIR *directory) {
    meridian_readdir_function libc_readdir = meridian_libc_readdir();
    if (libc_readdir == NULL) {
        errno = ENOSYS;
        return NULL;
    }
    struct dirent *entry = libc_readdir(directory);
    if (entry == NULL) return NULL;
    struct dirent *copy = &meridian_dirents[meridian_next_dirent++ % meridian_dirent_copies];
    size_t length = entry->d_reclen < sizeof *copy ? entry->d_reclen : sizeof *copy;
    memcpy(copy, entry, length);
    memset((char *)copy + length, 0, sizeof *copy - length);
    return copy;
}

int meridian_readdir_is_whole_record(const struct dirent *entry) {
    for (int i = 0; i < meridian_dirent_copies; i++) {
        if (entry == &meridian_dirents[i]) return 1;
    }
    return 0;
}
#else
#include "CMeridianProcessIO.h"

int meridian_readdir_is_whole_record(const struct dirent *entry) { return 0; }
#endif
