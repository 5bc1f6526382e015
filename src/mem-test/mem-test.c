/* mem-test: NUMA-aware DRAM traffic that emulates a streaming application's
 * writes, reads, copies and corner turns at a desired rate (see README).
 * One worker thread per core of each selected NUMA domain, bound to that core;
 * each worker owns some stages of the stations placed on its domain, with
 * buffers allocated on that domain, and runs their blocks earliest-deadline
 * first on a fixed schedule. */
#include "../common/cb_common.h"
#include "memops.h"
#include "workload.h"

#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define TEST_VERSION "1.0"
#define SLOT_ALIGN 4096

typedef struct job {
    mt_stage st;
    int station;
    size_t slots, stride;      /* ring of slots, each stride bytes apart */
    size_t ring_bytes;
    char *src, *dst;           /* rings on the domain's node (NULL if unused) */
    uint64_t *slot_sum;        /* known sums of the read rings */
    double period_ns;
    uint64_t next_k, nblocks;
    uint64_t seed_base;
} job;

typedef struct worker {
    int domain;                /* index into run.domains */
    int pu;
    job *jobs;
    int njobs;
    double load_gbits;
    pthread_t th;
    /* results, written by the worker only */
    uint64_t bytes[MT_NOPS], busy_ns[MT_NOPS];
    uint64_t blocks, late, missed, verify_errors, last_done_ns;
    _Atomic uint64_t progress_bytes, progress_blocks, progress_late;
    char error[256];
} worker;

typedef struct domain {
    const cb_numa *node;
    int stations, nthreads;
    double desired_gbits;
    size_t buffer_bytes;
} domain;

static struct {
    mt_params p;
    double duration_s, threshold;
    int max_mode, quiet;
    const char *json_path;
    int nodes[CB_MAX_CPUS], nnodes_sel, threads_per_domain;
    cb_topo topo;
    domain *domains;
    int ndomains;
    worker *workers;
    int nworkers;
    pthread_barrier_t ready, go;
    uint64_t t0, sched_end, hard_stop;
    atomic_int finished;
    int fault_op;              /* MEM_TEST_FAULT: skip one block's work of this op */
    atomic_int fault_pending;
} run;

static void usage(FILE *f)
{
    fprintf(f,
"Usage: mem-test [OPTION]...\n"
"Emulate the DRAM traffic of a streaming application on this node, spread over\n"
"its NUMA domains, at a desired rate, and report whether the node sustains it.\n"
"\n"
"Workload model (per station, i.e. one input data stream):\n"
"  at the input rate R:  NIC->DRAM write, kernel->user copy, user->staging\n"
"                        transpose (blocks of --small-block packets), network-\n"
"                        exchange copy, GPU-staging transpose, DRAM->GPU read\n"
"                        (blocks of --large-block packets);\n"
"  after the data reduction, at R / --reduction: GPU->DRAM write, output-staging\n"
"                        copy, user->kernel copy, DRAM->NIC read.\n"
"  Copies and transposes count twice (read + write). Desired speed =\n"
"  stations x R x (10 + 6 / reduction): 18 x 3 x 13 = 702 Gbit/s by default.\n"
"  A transpose is the corner turn of a block of packets x samples into\n"
"  samples x packets order (station-time order into time-station order).\n"
"  Stations are spread evenly over the NUMA domains; each domain runs one\n"
"  thread per core, bound to it, with all buffers on that domain.\n"
"\n"
"Workload:\n"
"  -s, --stations=N          input streams on this node (default 18)\n"
"      --input-rate=GBITS    per-station input rate in Gbit/s (default 3)\n"
"      --reduction=N         data reduction factor of the later stages (default 2)\n"
"      --packet-size=BYTES   packet payload, multiple of 8 (default 9000)\n"
"      --small-block=N       packets per block of the first stages (default 128)\n"
"      --large-block=N       packets per block of the later stages (default 1024)\n"
"      --sample-bytes=N      bytes per sample in the corner turns: 4, 8 or 16\n"
"                            (default 8: dual-polarisation complex 16-bit)\n"
"  -r, --desired-rate=GBITS  set the node's desired speed directly (scales the\n"
"                            input rate; overrides --input-rate)\n"
"      --ops=LIST            run only these operations: write,read,copy,transpose\n"
"                            (default all; the desired speed counts only these)\n"
"Run:\n"
"  -d, --duration=SECONDS    length of the run (default 10; rounded up to whole\n"
"                            schedule periods)\n"
"  -m, --max                 run unpaced and report the highest sustained speed\n"
"  -n, --numa-nodes=LIST     NUMA nodes to use, e.g. 0,1 or 0-3 (default all)\n"
"  -T, --threads-per-domain=N  worker threads per domain (default one per core)\n"
"  -t, --threshold=PCT       compliant when measured >= PCT%% of desired\n"
"                            (default 99.75)\n"
"Output:\n"
"  -j, --json=FILE           write the JSON result document to FILE ('-' = stdout)\n"
"  -q, --quiet               no progress lines on stderr\n"
"  -h, --help                this help\n"
"  -V, --version             version\n"
"\n"
"Every block is verified: tags stamped into each source are looked for in the\n"
"destination (copies and transposes), fills are spot-checked and reads summed\n"
"against the known sum. A mismatch fails the run.\n"
"\n"
"Exit status: 0 compliant, 1 not compliant or verification failed,\n"
"2 usage error, 3 could not run.\n");
}

static unsigned parse_ops(const char *arg)
{
    unsigned mask = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int o = 0; o < MT_NOPS; o++)
            if (strcmp(tok, mt_op_names[o]) == 0) {
                mask |= 1u << o;
                found = 1;
            }
        if (!found)
            cb_usage_error("invalid operation '%s' for --ops: expected write, read, copy or transpose", tok);
    }
    if (!mask)
        cb_usage_error("--ops selects no operation");
    return mask;
}

static void parse_args(int argc, char **argv)
{
    enum { O_INPUT = 256, O_RED, O_PKT, O_SMALL, O_LARGE, O_SAMPLE, O_OPS };
    static const struct option opts[] = {
        {"stations", required_argument, 0, 's'},
        {"input-rate", required_argument, 0, O_INPUT},
        {"reduction", required_argument, 0, O_RED},
        {"packet-size", required_argument, 0, O_PKT},
        {"small-block", required_argument, 0, O_SMALL},
        {"large-block", required_argument, 0, O_LARGE},
        {"sample-bytes", required_argument, 0, O_SAMPLE},
        {"desired-rate", required_argument, 0, 'r'},
        {"ops", required_argument, 0, O_OPS},
        {"duration", required_argument, 0, 'd'},
        {"max", no_argument, 0, 'm'},
        {"numa-nodes", required_argument, 0, 'n'},
        {"threads-per-domain", required_argument, 0, 'T'},
        {"threshold", required_argument, 0, 't'},
        {"json", required_argument, 0, 'j'},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0}};
    double desired = 0, input = 0;
    mt_params_default(&run.p);
    run.duration_s = 10;
    run.threshold = 99.75;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":s:r:d:mn:T:t:j:qhV", opts, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 's': run.p.stations = (int)cb_opt_long("--stations", optarg, 1, 100000); break;
        case O_INPUT: input = cb_opt_double("--input-rate", optarg, 1e-6, 1e6); break;
        case O_RED: run.p.reduction = (int)cb_opt_long("--reduction", optarg, 1, 1024); break;
        case O_PKT: run.p.packet_bytes = (size_t)cb_opt_long("--packet-size", optarg, 64, 1 << 20); break;
        case O_SMALL: run.p.small_packets = (size_t)cb_opt_long("--small-block", optarg, 1, 1 << 16); break;
        case O_LARGE: run.p.large_packets = (size_t)cb_opt_long("--large-block", optarg, 1, 1 << 16); break;
        case O_SAMPLE: run.p.sample_bytes = (size_t)cb_opt_long("--sample-bytes", optarg, 4, 16); break;
        case 'r': desired = cb_opt_double("--desired-rate", optarg, 1e-6, 1e7); break;
        case O_OPS: run.p.op_mask = parse_ops(optarg); break;
        case 'd': run.duration_s = cb_opt_double("--duration", optarg, 0.01, 7 * 86400.0); break;
        case 'm': run.max_mode = 1; break;
        case 'n':
            run.nnodes_sel = cb_opt_intlist("--numa-nodes", optarg, run.nodes, CB_MAX_CPUS);
            break;
        case 'T': run.threads_per_domain = (int)cb_opt_long("--threads-per-domain", optarg, 1, CB_MAX_CPUS); break;
        case 't': run.threshold = cb_opt_double("--threshold", optarg, 0, 1000); break;
        case 'j': run.json_path = optarg; break;
        case 'q': run.quiet = 1; break;
        case 'h': usage(stdout); exit(0);
        case 'V': cb_print_version(TEST_VERSION); exit(0);
        case ':': cb_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: cb_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        cb_usage_error("unexpected argument '%s'", argv[optind]);
    if (desired > 0 && input > 0)
        cb_usage_error("--desired-rate and --input-rate both set the rate; give one");
    if (input > 0)
        run.p.input_gbits = input;
    const char *why = mt_params_check(&run.p);
    if (why)
        cb_usage_error("%s", why);
    if (desired > 0)
        mt_set_desired(&run.p, desired);
    if (run.json_path && cb_json_path_ok(run.json_path) != 0)
        cb_usage_error("cannot write --json %s: its directory does not exist or is not writable", run.json_path);
}

/* ---- set-up -------------------------------------------------------------- */
static void plan(void)
{
    if (cb_topo_load(&run.topo) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "cannot read the topology through hwloc");
    if (run.nnodes_sel == 0)
        for (int i = 0; i < run.topo.nnodes; i++)
            run.nodes[run.nnodes_sel++] = run.topo.nodes[i].os_index;
    char have[512] = "";
    for (int i = 0; i < run.topo.nnodes; i++)
        snprintf(have + strlen(have), sizeof have - strlen(have), "%s%d", i ? "," : "",
                 run.topo.nodes[i].os_index);
    for (int i = 0; i < run.nnodes_sel; i++) {
        const cb_numa *n = cb_topo_node(&run.topo, run.nodes[i]);
        if (!n)
            cb_usage_error("NUMA node %d does not exist (this machine has node%s %s)",
                           run.nodes[i], run.topo.nnodes > 1 ? "s" : "", have);
        if (n->ncores == 0)
            cb_usage_error("NUMA node %d has no usable core (memory-only node)", run.nodes[i]);
        if (run.threads_per_domain > n->npus)
            cb_usage_error("--threads-per-domain %d exceeds the %d CPUs of NUMA node %d",
                           run.threads_per_domain, n->npus, run.nodes[i]);
    }

    mt_stage st[MT_NSTAGES];
    int nst = mt_stages(&run.p, st);
    double station_gbits = mt_desired_gbits(&run.p) / run.p.stations;

    run.ndomains = run.nnodes_sel;
    run.domains = calloc((size_t)run.ndomains, sizeof *run.domains);
    int total_threads = 0;
    for (int d = 0; d < run.ndomains; d++) {
        domain *dm = &run.domains[d];
        dm->node = cb_topo_node(&run.topo, run.nodes[d]);
        dm->stations = run.p.stations / run.ndomains + (d < run.p.stations % run.ndomains);
        dm->desired_gbits = dm->stations * station_gbits;
        int want = run.threads_per_domain ? run.threads_per_domain : dm->node->ncores;
        int jobs = dm->stations * nst;
        dm->nthreads = want < jobs ? want : jobs;
        total_threads += dm->nthreads;
    }
    run.workers = calloc((size_t)total_threads, sizeof *run.workers);
    run.nworkers = total_threads;

    /* Jobs (station x stage) go to the least-loaded thread of their domain,
     * largest first, so threads carry similar traffic. */
    int w0 = 0;
    for (int d = 0; d < run.ndomains; d++) {
        domain *dm = &run.domains[d];
        int nthr = dm->nthreads;
        for (int t = 0; t < nthr; t++) {
            worker *w = &run.workers[w0 + t];
            w->domain = d;
            /* one thread per core; beyond the cores, the other PUs */
            w->pu = t < dm->node->ncores ? dm->node->core_pu[t] : dm->node->pus[t % dm->node->npus];
            w->jobs = calloc((size_t)(dm->stations * nst), sizeof(job));
        }
        /* stations of this domain: s = d, d + ndomains, ... */
        int order[MT_NSTAGES];
        for (int i = 0; i < nst; i++)
            order[i] = i;
        for (int i = 0; i < nst; i++) /* stages by traffic, largest first */
            for (int k = i + 1; k < nst; k++)
                if (st[order[k]].traffic_gbits > st[order[i]].traffic_gbits) {
                    int tmp = order[i];
                    order[i] = order[k];
                    order[k] = tmp;
                }
        for (int i = 0; i < nst; i++)
            for (int s = 0; s < dm->stations; s++) {
                worker *best = &run.workers[w0];
                for (int t = 1; t < nthr; t++)
                    if (run.workers[w0 + t].load_gbits < best->load_gbits)
                        best = &run.workers[w0 + t];
                job *j = &best->jobs[best->njobs++];
                j->st = st[order[i]];
                j->station = d + s * run.ndomains;
                best->load_gbits += st[order[i]].traffic_gbits;
            }
        /* Ring length: enough slots that a domain's buffers exceed its share of
         * the last-level cache four times, so blocks come from DRAM. */
        size_t per_slot = 0;
        for (int t = 0; t < nthr; t++)
            for (int k = 0; k < run.workers[w0 + t].njobs; k++) {
                job *j = &run.workers[w0 + t].jobs[k];
                int bufs = j->st.op == MT_COPY || j->st.op == MT_TRANSPOSE ? 2 : 1;
                per_slot += bufs * j->st.block_bytes;
            }
        size_t slots = 2;
        uint64_t cache = run.topo.l3_bytes ? run.topo.l3_bytes : (64u << 20);
        while (slots < 64 && per_slot * slots < 4 * cache)
            slots++;
        for (int t = 0; t < nthr; t++)
            for (int k = 0; k < run.workers[w0 + t].njobs; k++) {
                job *j = &run.workers[w0 + t].jobs[k];
                j->slots = slots;
                j->stride = (j->st.block_bytes + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
                j->ring_bytes = j->stride * slots;
                j->period_ns = j->st.period_s * 1e9;
                j->seed_base = ((uint64_t)j->station << 32) ^ ((uint64_t)(j - run.workers[w0 + t].jobs) << 20) ^ (uint64_t)(w0 + t);
                int bufs = j->st.op == MT_COPY || j->st.op == MT_TRANSPOSE ? 2 : 1;
                dm->buffer_bytes += bufs * j->ring_bytes;
            }
        w0 += nthr;
    }
}

/* ---- the worker ---------------------------------------------------------- */
static int take_fault(enum mt_op op)
{
    if (run.fault_op != (int)op)
        return 0;
    int one = 1;
    return atomic_compare_exchange_strong(&run.fault_pending, &one, 0);
}

static int alloc_job(worker *w, job *j)
{
    int node = run.domains[w->domain].node->os_index;
    enum mt_op op = j->st.op;
    if (op != MT_WRITE && !(j->src = cb_alloc_on_node(&run.topo, node, j->ring_bytes)))
        return -1;
    if (op != MT_READ && !(j->dst = cb_alloc_on_node(&run.topo, node, j->ring_bytes)))
        return -1;
    /* First touch from the bound thread; sources get data, reads a known sum. */
    if (j->dst)
        memset(j->dst, 0, j->ring_bytes);
    if (j->src) {
        mt_fill((uint64_t *)j->src, j->ring_bytes / 8, j->seed_base);
        if (op == MT_READ) {
            j->slot_sum = calloc(j->slots, sizeof(uint64_t));
            if (!j->slot_sum)
                return -1;
            for (size_t s = 0; s < j->slots; s++)
                j->slot_sum[s] = mt_sum((uint64_t *)(j->src + s * j->stride), j->st.block_bytes / 8);
        }
    }
    return 0;
}

/* One block: stamp, operate (timed), verify. Returns traffic bytes. */
static uint64_t run_block(worker *w, job *j)
{
    size_t slot = j->next_k % j->slots, bytes = j->st.block_bytes, words = bytes / 8;
    char *src = j->src ? j->src + slot * j->stride : NULL;
    char *dst = j->dst ? j->dst + slot * j->stride : NULL;
    uint64_t seed = mt_mix(j->seed_base + j->next_k);
    size_t es = run.p.sample_bytes;
    uint64_t t0, t1, traffic = bytes;
    int bad = 0;
    switch (j->st.op) {
    case MT_WRITE:
        t0 = cb_now_ns();
        if (!take_fault(MT_WRITE))
            mt_fill((uint64_t *)dst, words, seed);
        t1 = cb_now_ns();
        bad = mt_check_fill((uint64_t *)dst, words, seed);
        break;
    case MT_COPY:
        mt_stamp(src, words, 8, seed);
        t0 = cb_now_ns();
        if (!take_fault(MT_COPY))
            mt_copy(dst, src, bytes);
        t1 = cb_now_ns();
        bad = mt_check_copy(dst, words, 8, seed);
        traffic = 2 * bytes;
        break;
    case MT_TRANSPOSE:
        mt_stamp(src, j->st.rows * j->st.cols, es, seed);
        t0 = cb_now_ns();
        if (!take_fault(MT_TRANSPOSE))
            mt_transpose(dst, src, j->st.rows, j->st.cols, es);
        t1 = cb_now_ns();
        bad = mt_check_transpose(dst, j->st.rows, j->st.cols, es, seed);
        traffic = 2 * bytes;
        break;
    default: {
        mt_stamp_sum((uint64_t *)src, words, seed, &j->slot_sum[slot]);
        t0 = cb_now_ns();
        uint64_t sum = mt_sum((uint64_t *)src, take_fault(MT_READ) ? words - 1 : words);
        t1 = cb_now_ns();
        bad = sum != j->slot_sum[slot];
        break;
    }
    }
    if (bad)
        w->verify_errors++;
    w->busy_ns[j->st.op] += t1 - t0;
    w->bytes[j->st.op] += traffic;
    return traffic;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    if (cb_bind_thread_to_pu(&run.topo, w->pu) != 0)
        snprintf(w->error, sizeof w->error, "cannot bind a thread to CPU %d", w->pu);
    for (int k = 0; k < w->njobs && !w->error[0]; k++)
        if (alloc_job(w, &w->jobs[k]) != 0)
            snprintf(w->error, sizeof w->error, "cannot allocate %zu MiB on NUMA node %d",
                     w->jobs[k].ring_bytes >> 20, run.domains[w->domain].node->os_index);
    pthread_barrier_wait(&run.ready);
    pthread_barrier_wait(&run.go);
    if (w->error[0] || run.t0 == 0)
        goto out;
    for (;;) {
        /* earliest deadline first among this thread's jobs */
        job *j = NULL;
        double best = 0;
        for (int k = 0; k < w->njobs; k++) {
            job *c = &w->jobs[k];
            double rel = (double)c->next_k * c->period_ns;
            if (c->next_k < c->nblocks && (!j || rel < best)) {
                j = c;
                best = rel;
            }
        }
        if (!j)
            break;
        uint64_t release = run.t0 + (uint64_t)best;
        if (!run.max_mode && release > cb_now_ns())
            cb_sleep_until_ns(release);
        if (cb_now_ns() >= run.hard_stop)
            break;
        uint64_t traffic = run_block(w, j);
        uint64_t done = cb_now_ns();
        int late = !run.max_mode && done > release + (uint64_t)j->period_ns;
        j->next_k++;
        w->blocks++;
        w->late += late;
        w->last_done_ns = done;
        atomic_fetch_add_explicit(&w->progress_bytes, traffic, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->progress_blocks, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->progress_late, (uint64_t)late, memory_order_relaxed);
    }
    if (!run.max_mode)
        for (int k = 0; k < w->njobs; k++)
            w->missed += w->jobs[k].nblocks - w->jobs[k].next_k;
out:
    atomic_fetch_add(&run.finished, 1);
    return NULL;
}

/* ---- reporting ------------------------------------------------------------- */

static void cpus_str(const worker *ws, int n, int domain, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        if (ws[i].domain == domain)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%d", buf[0] ? "," : "", ws[i].pu);
}

int main(int argc, char **argv)
{
    cb_prog = "mem-test";
    parse_args(argc, argv);
    const char *fault = getenv("MEM_TEST_FAULT");
    run.fault_op = -1;
    if (fault && *fault) {
        for (int o = 0; o < MT_NOPS; o++)
            if (strcmp(fault, mt_op_names[o]) == 0)
                run.fault_op = o;
        if (run.fault_op < 0)
            cb_usage_error("MEM_TEST_FAULT must name an operation (write, read, copy, transpose)");
        atomic_store(&run.fault_pending, 1);
    }
    plan();

    char started[64], host[256];
    cb_iso8601_now(started, sizeof started);
    cb_hostname(host, sizeof host);
    double desired = mt_desired_gbits(&run.p);
    double hyper = mt_hyperperiod_s(&run.p);
    /* whole schedule periods, so the run schedules exactly the desired traffic */
    double periods = ceil(run.duration_s / hyper - 1e-9);
    double sched_s = run.max_mode ? run.duration_s : periods * hyper;

    printf("mem-test (cobalt-bench) %s on %s, started %s, kernels: %s\n", CB_VERSION, host, started, mt_isa());
    printf("Workload: %d station%s at %.3f Gbit/s input, reduction %d, packets of %zu B, "
           "blocks of %zu/%zu packets, %zu-byte samples\n",
           run.p.stations, run.p.stations > 1 ? "s" : "", run.p.input_gbits, run.p.reduction,
           run.p.packet_bytes, run.p.small_packets, run.p.large_packets, run.p.sample_bytes);
    for (int d = 0; d < run.ndomains; d++) {
        char cpus[1024];
        cpus_str(run.workers, run.nworkers, d, cpus, sizeof cpus);
        printf("NUMA node %d: %d station%s, %d thread%s on CPUs %s, %.1f MiB of buffers, desired %.2f Gbit/s\n",
               run.domains[d].node->os_index, run.domains[d].stations, run.domains[d].stations == 1 ? "" : "s",
               run.domains[d].nthreads, run.domains[d].nthreads == 1 ? "" : "s", cpus,
               run.domains[d].buffer_bytes / 1048576.0, run.domains[d].desired_gbits);
    }
    printf("Running %s for %.2f s\n", run.max_mode ? "unpaced (--max)" : "paced", sched_s);
    fflush(stdout);

    pthread_barrier_init(&run.ready, NULL, (unsigned)run.nworkers + 1);
    pthread_barrier_init(&run.go, NULL, (unsigned)run.nworkers + 1);
    for (int i = 0; i < run.nworkers; i++)
        if (pthread_create(&run.workers[i].th, NULL, worker_main, &run.workers[i]) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "cannot start worker thread %d", i);
    pthread_barrier_wait(&run.ready);
    const char *err = NULL;
    for (int i = 0; i < run.nworkers; i++)
        if (run.workers[i].error[0])
            err = run.workers[i].error;
    if (!err) {
        run.t0 = cb_now_ns() + 20000000ULL; /* all threads start on the same tick */
        run.sched_end = run.t0 + (uint64_t)(sched_s * 1e9);
        /* A node far behind its schedule is not waited for forever. */
        run.hard_stop = run.max_mode ? run.sched_end : run.sched_end + (uint64_t)(fmax(1.0, sched_s * 0.25) * 1e9);
        for (int i = 0; i < run.nworkers; i++)
            for (int k = 0; k < run.workers[i].njobs; k++) {
                job *j = &run.workers[i].jobs[k];
                j->nblocks = run.max_mode ? UINT64_MAX : (uint64_t)llround(sched_s * 1e9 / j->period_ns);
            }
    }
    pthread_barrier_wait(&run.go);
    if (err) {
        for (int i = 0; i < run.nworkers; i++)
            pthread_join(run.workers[i].th, NULL);
        cb_die(CB_EXIT_CANNOT_RUN, "%s", err);
    }

    /* progress while the workers run */
    double interval = sched_s > 60 ? 5.0 : 1.0;
    uint64_t next = run.t0 + (uint64_t)(interval * 1e9);
    while (atomic_load(&run.finished) < run.nworkers) {
        cb_sleep_until_ns(fmin(next, cb_now_ns() + 50000000ULL));
        uint64_t now = cb_now_ns();
        if (now < next || now <= run.t0)
            continue;
        next += (uint64_t)(interval * 1e9);
        if (run.quiet)
            continue;
        uint64_t b = 0, n = 0, l = 0;
        for (int i = 0; i < run.nworkers; i++) {
            b += atomic_load_explicit(&run.workers[i].progress_bytes, memory_order_relaxed);
            n += atomic_load_explicit(&run.workers[i].progress_blocks, memory_order_relaxed);
            l += atomic_load_explicit(&run.workers[i].progress_late, memory_order_relaxed);
        }
        double el = (now - run.t0) / 1e9;
        fprintf(stderr, "[%7.1f s / %.1f s] %9.2f Gbit/s, %llu blocks, late %.3f%%\n", el, sched_s,
                cb_gbits((double)b, el), (unsigned long long)n, n ? 100.0 * l / n : 0.0);
    }
    for (int i = 0; i < run.nworkers; i++)
        pthread_join(run.workers[i].th, NULL);

    /* totals */
    uint64_t bytes[MT_NOPS] = {0}, busy[MT_NOPS] = {0}, blocks = 0, late = 0, missed = 0, errors = 0, last = 0;
    for (int i = 0; i < run.nworkers; i++) {
        worker *w = &run.workers[i];
        for (int o = 0; o < MT_NOPS; o++) {
            bytes[o] += w->bytes[o];
            busy[o] += w->busy_ns[o];
        }
        blocks += w->blocks;
        late += w->late;
        missed += w->missed;
        errors += w->verify_errors;
        if (w->last_done_ns > last)
            last = w->last_done_ns;
    }
    double elapsed = sched_s;
    if (last > run.sched_end) /* paced: caught up only after the schedule; max: last block */
        elapsed = (last - run.t0) / 1e9;
    if (missed) /* it never caught up: the run ended at the hard stop */
        elapsed = (run.hard_stop - run.t0) / 1e9;
    uint64_t total = 0;
    for (int o = 0; o < MT_NOPS; o++)
        total += bytes[o];
    double measured = cb_gbits((double)total, elapsed);
    double pct = desired > 0 ? 100.0 * measured / desired : 0;
    double late_pct = blocks + missed ? 100.0 * (double)(late + missed) / (double)(blocks + missed) : 0;
    int passed = errors == 0 && pct >= run.threshold;

    printf("Per operation:");
    for (int o = 0; o < MT_NOPS; o++)
        if (run.p.op_mask & (1u << o))
            printf(" %s %.2f Gbit/s", mt_op_names[o], cb_gbits((double)bytes[o], elapsed));
    printf("\n");
    for (int d = 0; d < run.ndomains; d++) {
        uint64_t db = 0, dl = 0, dn = 0;
        for (int i = 0; i < run.nworkers; i++)
            if (run.workers[i].domain == d) {
                for (int o = 0; o < MT_NOPS; o++)
                    db += run.workers[i].bytes[o];
                dl += run.workers[i].late + run.workers[i].missed;
                dn += run.workers[i].blocks + run.workers[i].missed;
            }
        printf("NUMA node %d: measured %.2f Gbit/s of %.2f desired, late %.3f%%\n",
               run.domains[d].node->os_index, cb_gbits((double)db, elapsed), run.domains[d].desired_gbits,
               dn ? 100.0 * dl / dn : 0.0);
    }
    printf("Verification: %llu blocks checked, %llu errors\n", (unsigned long long)blocks,
           (unsigned long long)errors);
    if (missed)
        printf("Not processed: %llu blocks (the node fell behind and did not catch up)\n",
               (unsigned long long)missed);
    if (errors)
        printf("VERIFICATION FAILED: %llu blocks did not hold the data they should; the speed is not valid\n",
               (unsigned long long)errors);

    int rc = passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
    if (run.json_path) {
        cb_json j;
        cbj_init(&j);
        cbj_doc_begin(&j, "mem-test", TEST_VERSION, started);
        cbj_num(&j, "duration_s", elapsed);
        cbj_obj_begin(&j, "config");
        cbj_int(&j, "stations", run.p.stations);
        cbj_num(&j, "input_rate_gbits", run.p.input_gbits);
        cbj_int(&j, "reduction", run.p.reduction);
        cbj_int(&j, "packet_bytes", (long long)run.p.packet_bytes);
        cbj_int(&j, "small_block_packets", (long long)run.p.small_packets);
        cbj_int(&j, "large_block_packets", (long long)run.p.large_packets);
        cbj_int(&j, "sample_bytes", (long long)run.p.sample_bytes);
        cbj_arr_begin(&j, "ops");
        for (int o = 0; o < MT_NOPS; o++)
            if (run.p.op_mask & (1u << o))
                cbj_str(&j, NULL, mt_op_names[o]);
        cbj_arr_end(&j);
        cbj_bool(&j, "max", run.max_mode);
        cbj_num(&j, "requested_duration_s", run.duration_s);
        cbj_num(&j, "scheduled_duration_s", sched_s);
        cbj_int(&j, "threads", run.nworkers);
        cbj_str(&j, "kernels", mt_isa());
        cbj_obj_end(&j);
        cbj_obj_begin(&j, "metrics");
        cbj_metric(&j, "desired_speed", desired, "Gbit/s");
        cbj_metric(&j, "measured_speed", measured, "Gbit/s");
        cbj_metric(&j, "measured_speed_bytes", measured * 1e9 / 8, "B/s");
        cbj_metric(&j, "percent_of_desired", pct, "%");
        if (!run.max_mode)
            cbj_metric(&j, "average_late", late_pct, "%");
        for (int o = 0; o < MT_NOPS; o++)
            if (run.p.op_mask & (1u << o)) {
                char name[32];
                snprintf(name, sizeof name, "%s_speed", mt_op_names[o]);
                cbj_metric(&j, name, cb_gbits((double)bytes[o], elapsed), "Gbit/s");
                snprintf(name, sizeof name, "%s_busy_speed", mt_op_names[o]);
                /* per-thread speed while busy with this operation, summed over threads */
                cbj_metric(&j, name, busy[o] ? cb_gbits((double)bytes[o], busy[o] / 1e9) * run.nworkers : 0, "Gbit/s");
            }
        cbj_metric(&j, "verified_blocks", (double)blocks, "blocks");
        cbj_metric(&j, "verification_errors", (double)errors, "errors");
        cbj_metric(&j, "missed_blocks", (double)missed, "blocks");
        cbj_obj_end(&j);
        cbj_arr_begin(&j, "domains");
        for (int d = 0; d < run.ndomains; d++) {
            uint64_t db = 0, dl = 0, dn = 0;
            cbj_obj_begin(&j, NULL);
            cbj_int(&j, "numa_node", run.domains[d].node->os_index);
            cbj_arr_begin(&j, "cpus");
            for (int i = 0; i < run.nworkers; i++)
                if (run.workers[i].domain == d) {
                    cbj_int(&j, NULL, run.workers[i].pu);
                    for (int o = 0; o < MT_NOPS; o++)
                        db += run.workers[i].bytes[o];
                    dl += run.workers[i].late + run.workers[i].missed;
                    dn += run.workers[i].blocks + run.workers[i].missed;
                }
            cbj_arr_end(&j);
            cbj_int(&j, "stations", run.domains[d].stations);
            cbj_int(&j, "buffer_bytes", (long long)run.domains[d].buffer_bytes);
            cbj_num(&j, "desired_speed_gbits", run.domains[d].desired_gbits);
            cbj_num(&j, "measured_speed_gbits", cb_gbits((double)db, elapsed));
            if (!run.max_mode)
                cbj_num(&j, "average_late_percent", dn ? 100.0 * dl / dn : 0.0);
            cbj_obj_end(&j);
        }
        cbj_arr_end(&j);
        cbj_obj_begin(&j, "compliance");
        cbj_num(&j, "threshold", run.threshold);
        cbj_bool(&j, "passed", passed);
        cbj_obj_end(&j);
        cbj_obj_end(&j);
        if (cb_json_write(&j, run.json_path) != 0)
            rc = CB_EXIT_CANNOT_RUN;
        cbj_free(&j);
    }

    cb_results_begin(stdout, TEST_VERSION);
    cb_results_line(stdout, "Desired speed", "%.2f Gbit/s", desired);
    cb_results_line(stdout, "Measured speed", "%.2f Gbit/s (%.2f%% of desired)", measured, pct);
    if (run.max_mode)
        cb_results_line(stdout, "Average late", "n/a (--max runs unpaced)");
    else
        cb_results_line(stdout, "Average late", "%.3f%%", late_pct);
    fflush(stdout);
    return rc;
}
