/* The vector instruction sets cpu-test computes with, what each is (vector width, chains
 * in flight), which this CPU runs, and the FMA streams in each (fma.c). */
#ifndef CT_ISA_H
#define CT_ISA_H

#include <stdint.h>

typedef enum ct_isa { CT_SCALAR, CT_NEON, CT_AVX2, CT_AVX512, CT_NISA } ct_isa;

/* The most doubles one block's chains hold (accumulators x lanes, every ISA). */
#define CT_MAX_VALUES 128

typedef struct ct_isa_info {
    const char *name;   /* as --isa names it */
    int lanes;          /* doubles per vector */
    int accumulators;   /* independent vectors in flight: enough to hide the FMA latency
                         * of two (four on wide ARM cores) FMA pipes */
} ct_isa_info;

const ct_isa_info *ct_isa_of(ct_isa isa);
/* The ISA of an --isa name other than "auto": 0, or -1 for a name no ISA has. */
int ct_isa_from_name(const char *name, ct_isa *out);
/* Whether this CPU (and its OS) runs the ISA, and the widest one it runs. */
int ct_isa_supported(ct_isa isa);
ct_isa ct_isa_best(void);
/* The ISAs this CPU runs, widest first, as "avx512, avx2, scalar". */
void ct_isa_list_supported(char *buf, unsigned len);

/* ---- the FMA streams (fma.c) ------------------------------------------------------ */
/* One block: the isa's accumulators x lanes chains start from start[0..n), each takes
 * `iters` steps x = fma(x, a, x) (x + a x, rounded once), and the results go to
 * out[0..n), n = accumulators x lanes. The caller checks the ISA is supported. */
void ct_fma_block(ct_isa isa, const double *start, double *out, double a, uint64_t iters);
/* The same chains computed one after another with scalar fma(): the reference every
 * block is compared with, bit for bit. */
void ct_fma_reference(const double *start, double *out, int n, double a, uint64_t iters);


/* ---- the workload's numbers (fma.c) ----------------------------------------------- */
/* Steps of each chain per block; the chains start afresh each block, from the same
 * values, so each block must end on the same results. */
#define CT_BLOCK_ITERS 16384
/* a small and negative, with low mantissa bits set: x shrinks by about 1.6% over a
 * block from its start between 1 and 2; every step rounds, nothing over- or underflows,
 * and a wrong value stays wrong (scaling by 1 + a leaves a difference almost whole). */
extern const double ct_a;
/* The chains' start values: n distinct values in [1, 2), one per lane of each
 * accumulator, so that a lane or an accumulator mixed up with another is caught. */
void ct_start_values(double *v, int n);
/* Lanes of got[0..n) whose bits differ from want's; *first (when not NULL) the first
 * such lane, else -1. A NaN is never right. */
int ct_check(const double *got, const double *want, int n, int *first);

#endif
