// Allocation counting for troupe-bench.
//
// The executable defines the malloc-family symbols itself. Because shared
// libraries in the link (libswiftCore, libdispatch, libc, ...) reference them,
// the linker exports these definitions and the dynamic linker binds every
// malloc/free in the process to them. Each wrapper forwards to glibc's own
// entry points (__libc_*), so the heap itself is untouched; the only added cost
// is one relaxed atomic increment per allocation.

#include "CBenchSupport.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <string.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>

// glibc's real allocator entry points (exported by libc.so.6, not declared in headers).
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void __libc_free(void *ptr);
extern void *__libc_memalign(size_t alignment, size_t size);

static _Atomic uint64_t CBenchSupport_allocations = 0;

static inline void CBenchSupport_count_one(void) {
    atomic_fetch_add_explicit(&CBenchSupport_allocations, 1, memory_order_relaxed);
}

void *malloc(size_t size) {
    CBenchSupport_count_one();
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    CBenchSupport_count_one();
    return __libc_calloc(count, size);
}

void *realloc(void *ptr, size_t size) {
    void *result = __libc_realloc(ptr, size);
    // A fresh block (realloc(NULL, n)) or a moved block is a new allocation;
    // in-place growth/shrink and realloc(p, 0) are not.
    if (result != NULL && result != ptr) {
        CBenchSupport_count_one();
    }
    return result;
}

void free(void *ptr) {
    __libc_free(ptr);
}

void *memalign(size_t alignment, size_t size) {
    CBenchSupport_count_one();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    CBenchSupport_count_one();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    // POSIX: alignment must be a power of two and a multiple of sizeof(void *).
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment % sizeof(void *) != 0) {
        return EINVAL;
    }
    CBenchSupport_count_one();
    void *result = __libc_memalign(alignment, size);
    if (result == NULL) {
        return ENOMEM;
    }
    *out = result;
    return 0;
}

uint64_t CBenchSupport_allocation_count(void) {
    return atomic_load_explicit(&CBenchSupport_allocations, memory_order_relaxed);
}

double CBenchSupport_process_cpu_seconds(void) {
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0) {
        return -1.0;
    }
    return (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec * 1e-6
         + (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec * 1e-6;
}

size_t CBenchSupport_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    // Chunks in the arenas and the blocks malloc maps on their own (large arrays, such as a
    // system's index of its live actors, 8 bytes per actor).
    return info.uordblks + info.hblkhd;
}

int CBenchSupport_reset_peak_rss(void) {
    malloc_trim(0);
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t written = write(fd, "5", 1);
    close(fd);
    return written == 1 ? 0 : -1;
}

// Reads one "Name:   123 kB" line of /proc/self/status, in bytes.
static int64_t status_field_bytes(const char *name) {
    char buffer[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t length = read(fd, buffer, sizeof buffer - 1);
    close(fd);
    if (length <= 0) {
        return -1;
    }
    buffer[length] = 0;
    size_t name_length = strlen(name);
    for (char *line = buffer; line != NULL && *line != 0;) {
        if (strncmp(line, name, name_length) == 0 && line[name_length] == ':') {
            int64_t kilobytes = 0;
            for (char *c = line + name_length + 1; *c != 0 && *c != '\n'; c++) {
                if (*c >= '0' && *c <= '9') {
                    kilobytes = kilobytes * 10 + (*c - '0');
                }
            }
            return kilobytes * 1024;
        }
        char *next = strchr(line, '\n');
        line = next == NULL ? NULL : next + 1;
    }
    return -1;
}

int64_t CBenchSupport_peak_rss_bytes(void) {
    return status_field_bytes("VmHWM");
}

int64_t CBenchSupport_rss_bytes(void) {
    return status_field_bytes("VmRSS");
}
