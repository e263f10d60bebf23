// ThreadSanitizer annotations for hand-offs through liburcu's queues.
//
// liburcu's x86 atomics are inline assembly and the library itself is not instrumented, so
// TSan cannot see that an enqueue happens-before the matching dequeue. Each hand-off is
// declared explicitly: release on the node before it is published, acquire after it is taken.
// This has to live in a .c file: the Swift importer does not see the sanitizer feature.
#ifndef CTROUPE_TSAN_H
#define CTROUPE_TSAN_H

#if defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define CTROUPE_TSAN 1
#  endif
#endif
#if defined(__SANITIZE_THREAD__)
#  define CTROUPE_TSAN 1
#endif

#ifdef CTROUPE_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#  define CTROUPE_TSAN_RELEASE(p) __tsan_release((void *)(p))
#  define CTROUPE_TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#else
#  define CTROUPE_TSAN_RELEASE(p) ((void)0)
#  define CTROUPE_TSAN_ACQUIRE(p) ((void)0)
#endif

#endif
