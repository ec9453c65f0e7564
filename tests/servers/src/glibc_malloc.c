/* Preloaded before libfaketime into a redis-server linked against jemalloc: jemalloc's
 * start calls clock_gettime, which libfaketime serves by starting itself, which allocates:
 * a recursion neither survives (libfaketime issue #130). With glibc's allocator (the
 * symbols below, found first) nothing allocates through jemalloc; its mallctl (INFO
 * memory) still works on its own, untouched arenas. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

void *malloc(size_t n) { return __libc_malloc(n); }
void *calloc(size_t n, size_t size) { return __libc_calloc(n, size); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }

size_t malloc_usable_size(void *p) {
    static size_t (*glibc)(void *);
    if (!glibc) {
        glibc = (size_t (*)(void *))dlsym(dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD), "malloc_usable_size");
    }
    return glibc(p);
}

/* jemalloc's size class of an allocation of n: glibc gives exactly n usable or more. */
size_t nallocx(size_t n, int flags) {
    (void)flags;
    return n;
}
