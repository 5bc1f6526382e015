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
#define CHECK_NEAR(a, b, tol) CHECK(((a) - (b)) <= (tol) && ((b) - (a)) <= (tol))
#define CBT_DONE()                                                                \
    do {                                                                          \
        printf("%d passed, %d failed\n", cbt_passed, cbt_failed);                 \
        return cbt_failed ? 1 : 0;                                                \
    } while (0)
#endif
