/* Minimal C unit-test macros: each CHECK counts; the closing line is the
 * plain "N passed, N failed" that CI reads. */
#ifndef CB_TEST_H
#define CB_TEST_H
#include <stdio.h>

static int cbt_passed, cbt_failed;
#define CHECK(cond)                                                               \
    do {                                                                          \
        if (cond)                                                                 \
            cbt_passed++;                                                         \
        else {                                                                    \
            cbt_failed++;                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                         \
    } while (0)
/* Run fn, whose CHECKs compare wall-clock rates (a model's shape, not a speed goal), up to
 * `attempts` times: a stall of a shared machine can bend one rate, a logic error fails
 * every attempt. Only the last attempt's failures count. */
#define CBT_TIMED(fn, attempts)                                                    \
    do {                                                                          \
        for (int cbt_try = 1;; cbt_try++) {                                       \
            int cbt_p = cbt_passed, cbt_f = cbt_failed;                           \
            fn();                                                                 \
            if (cbt_failed == cbt_f || cbt_try >= (attempts))                     \
                break;                                                            \
            fprintf(stderr, "%s: a timed check failed (attempt %d of %d); again\n", \
                    #fn, cbt_try, (attempts));                                    \
            cbt_passed = cbt_p;                                                   \
            cbt_failed = cbt_f;                                                   \
        }                                                                         \
    } while (0)
#define CHECK_NEAR(a, b, tol) CHECK(((a) - (b)) <= (tol) && ((b) - (a)) <= (tol))
#define CBT_DONE()                                                                \
    do {                                                                          \
        printf("%d passed, %d failed\n", cbt_passed, cbt_failed);                 \
        return cbt_failed ? 1 : 0;                                                \
    } while (0)
#endif
