/* Unit tests of src/common: option lists, JSON document, atomic writes,
 * results block, clock, the option table and the contract's envelope
 * (the hwloc wrapper: test_topo.c). */
#include "cb_test.h"
#include "common/cb_common.h"
#include "common/cb_hash.h"
#include "common/cb_options.h"

#include <math.h>
#include <stddef.h>
#include <fcntl.h>
#include <sys/wait.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_intlist(void)
{
    int v[16];
    CHECK(cb_parse_intlist("0-3,8", v, 16) == 5 && v[0] == 0 && v[3] == 3 && v[4] == 8);
    CHECK(cb_parse_intlist("5,1,5", v, 16) == 2 && v[0] == 1 && v[1] == 5);
    CHECK(cb_parse_intlist("", v, 16) == -1);
    CHECK(cb_parse_intlist("1,", v, 16) == -1);
    CHECK(cb_parse_intlist("3-1", v, 16) == -1);
    CHECK(cb_parse_intlist("-1", v, 16) == -1);
    CHECK(cb_parse_intlist("a", v, 16) == -1);
    CHECK(cb_parse_intlist("0-100", v, 16) == -1); /* more than fits */
}

/* The one number parser: whole strings only, nothing wraps, no NaN or infinity, no
 * empty list item (issue 14: --mkey=-1, seed=2^64, --ops=copy, and -L 1,,2 got through). */
static void test_strict_numbers(void)
{
    uint64_t u;
    int64_t i;
    double d;
    CHECK(cb_parse_u64("18446744073709551615", 10, &u) == 0 && u == UINT64_MAX);
    CHECK(cb_parse_u64("0x1F", 0, &u) == 0 && u == 31);
    CHECK(cb_parse_u64("0x1F", 10, &u) == -1); /* hexadecimal only where asked for */
    const char *bad_u[] = {"", "-1", "+1", " 1", "1 ", "18446744073709551616", "0x", "1x",
                           "0x10000000000000000", "1e3", "nan", "1,2"};
    for (size_t k = 0; k < sizeof bad_u / sizeof bad_u[0]; k++) {
        u = 7;
        CHECK(cb_parse_u64(bad_u[k], 0, &u) == -1 && u == 7);
    }
    CHECK(cb_parse_i64("-9223372036854775808", &i) == 0 && i == INT64_MIN);
    CHECK(cb_parse_i64("42", &i) == 0 && i == 42);
    const char *bad_i[] = {"", "-", "--1", "+1", " 1", "9223372036854775808", "1.0", "0x10", "1-"};
    for (size_t k = 0; k < sizeof bad_i / sizeof bad_i[0]; k++)
        CHECK(cb_parse_i64(bad_i[k], &i) == -1);
    CHECK(cb_parse_f64("2.5e3", &d) == 0 && d == 2500);
    CHECK(cb_parse_f64("-.5", &d) == 0 && d == -0.5);
    const char *bad_f[] = {"", "nan", "NaN", "inf", "-inf", "infinity", "1e999", "1e-400", "0x1p3",
                           " 1", "1 ", "1e", ".", "-", "1..2", "1,5"};
    for (size_t k = 0; k < sizeof bad_f / sizeof bad_f[0]; k++)
        CHECK(cb_parse_f64(bad_f[k], &d) == -1);

    char item[8];
    const char *cur = "a,bb,c";
    CHECK(cb_list_next(&cur, ",", item, sizeof item) == 1 && strcmp(item, "a") == 0);
    CHECK(cb_list_next(&cur, ",", item, sizeof item) == 1 && strcmp(item, "bb") == 0);
    CHECK(cb_list_next(&cur, ",", item, sizeof item) == 1 && strcmp(item, "c") == 0);
    CHECK(cb_list_next(&cur, ",", item, sizeof item) == 0);
    const char *bad_l[] = {"", "a,", ",a", "a,,b", "toolongitem"};
    for (size_t k = 0; k < sizeof bad_l / sizeof bad_l[0]; k++) {
        int r;
        cur = bad_l[k];
        while ((r = cb_list_next(&cur, ",", item, sizeof item)) == 1)
            ;
        CHECK(r == -1);
    }
    /* durations and sizes take the number through the same parser */
    CHECK(cb_parse_duration("0x10", &d) == -1 && cb_parse_duration("nans", &d) == -1);
    CHECK(cb_parse_duration("1e999s", &d) == -1 && cb_parse_duration("1 s", &d) == -1);
    CHECK(cb_parse_duration("1.5e3ms", &d) == 0 && d == 1.5);
    CHECK(cb_parse_size("0x10", &u) == -1 && cb_parse_size("18446744073709551616", &u) == -1);
    int v[16];
    CHECK(cb_parse_intlist("0,,1", v, 16) == -1);
    CHECK(cb_parse_intlist(",0", v, 16) == -1);
    CHECK(cb_parse_intlist("0-", v, 16) == -1);
    CHECK(cb_parse_intlist("+1", v, 16) == -1);
    CHECK(cb_parse_intlist(" 1", v, 16) == -1);
    CHECK(cb_parse_intlist("99999999999999999999", v, 16) == -1);
}

/* A kernel's metrics table: the document takes each unit from it. */
static const cb_metric_def test_metrics[] = {
    {"speed", "Gbit/s", CB_HIGHER, "a speed"},
    {"bad", "x", CB_NEITHER, "not a number"},
    {0},
};

static void test_json(void)
{
    cb_json j;
    cbj_init(&j);
    cbj_doc_begin(&j, "unit", "1.0", "2026-01-01T00:00:00Z");
    cbj_num(&j, "duration_s", 1.5);
    cbj_obj_begin(&j, "config");
    cbj_str(&j, "name", "a \"quoted\"\\ line\n\x01");
    cbj_arr_begin(&j, "list");
    cbj_int(&j, NULL, 1);
    cbj_int(&j, NULL, -2);
    cbj_arr_end(&j);
    cbj_arr_begin(&j, "empty");
    cbj_arr_end(&j);
    cbj_obj_end(&j);
    cbj_obj_begin(&j, "metrics");
    cbj_metric(&j, test_metrics, "speed", 0.1);
    cbj_metric(&j, test_metrics, "bad", 0.0 / 0.0);
    cbj_obj_end(&j);
    cbj_obj_begin(&j, "compliance");
    cbj_num(&j, "threshold", 99.75);
    cbj_bool(&j, "passed", 1);
    cbj_obj_end(&j);
    cbj_obj_end(&j);
    CHECK(!j.failed && j.depth == 0);
    CHECK(strstr(j.buf, "\"name\": \"a \\\"quoted\\\"\\\\ line\\n\\u0001\"") != NULL);
    CHECK(strstr(j.buf, "\"value\": 0.1,") != NULL); /* shortest round-trip form */
    CHECK(strstr(j.buf, "\"value\": null") != NULL); /* NaN is not JSON */
    CHECK(strstr(j.buf, "\"empty\": []") != NULL);
    CHECK(strstr(j.buf, "\"passed\": true") != NULL);
    CHECK(strstr(j.buf, "\"version\": \"" CB_VERSION "\"") != NULL);

    char dir[] = "/tmp/cbtest.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/r.json", dir);
    CHECK(cb_json_path_ok(path) == 0);
    CHECK(cb_json_write(&j, path) == 0);
    char *back = slurp(path);
    CHECK(back && strcmp(back, j.buf) == 0);
    /* an incomplete document is refused and the earlier result survives */
    cb_json k;
    cbj_init(&k);
    cbj_obj_begin(&k, NULL);
    CHECK(cb_json_write(&k, path) == -1);
    back = slurp(path);
    CHECK(back && strcmp(back, j.buf) == 0);
    cbj_free(&k);
    /* a directory that cannot be written: refused, old file intact, no temp left */
    chmod(dir, 0555);
    if (geteuid() != 0) { /* root writes anyway */
        CHECK(cb_json_write(&j, path) == -1);
    }
    chmod(dir, 0755);
    char missing[300];
    snprintf(missing, sizeof missing, "%s/no/such/dir/r.json", dir);
    CHECK(cb_json_path_ok(missing) == -1);
    CHECK(cb_json_write(&j, missing) == -1);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "test $(ls %s | wc -l) -eq 1", dir);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    cbj_free(&j);
}

static void test_results_block(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cb_results_begin(f, "1.0");
    cb_results_line(f, "Desired speed", "%.2f Gbit/s", 621.0);
    cb_results_line(f, "Average late", "%.3f%%", 40.548);
    fclose(f);
    /* the compliance document's layout: values in column 18 */
    CHECK(strcmp(buf, "----- Test results -----\n"
                      "Test version:    1.0\n"
                      "Desired speed:   621.00 Gbit/s\n"
                      "Average late:    40.548%\n") == 0);
    free(buf);
}

static void test_clock(void)
{
    uint64_t a = cb_now_ns();
    cb_sleep_until_ns(a + 20000000ULL);
    uint64_t b = cb_now_ns();
    CHECK(b >= a + 20000000ULL);
    char iso[64];
    cb_iso8601_now(iso, sizeof iso);
    CHECK(strlen(iso) == 20 && iso[10] == 'T' && iso[19] == 'Z');
}

static void test_sizes_durations(void)
{
    uint64_t b;
    double s;
    CHECK(cb_parse_size("4096", &b) == 0 && b == 4096);
    CHECK(cb_parse_size("64K", &b) == 0 && b == 65536);
    CHECK(cb_parse_size("256M", &b) == 0 && b == 256ULL << 20);
    CHECK(cb_parse_size("1G", &b) == 0 && b == 1ULL << 30);
    CHECK(cb_parse_size("2TiB", &b) == 0 && b == 2ULL << 40);
    CHECK(cb_parse_size("512k", &b) == 0 && b == 512u << 10);
    CHECK(cb_parse_size("64MB", &b) == 0 && b == 64u << 20);
    CHECK(cb_parse_size("4096B", &b) == 0 && b == 4096);
    CHECK(cb_parse_size("G", &b) == -1 && cb_parse_size("4X", &b) == -1);
    CHECK(cb_parse_size("4KX", &b) == -1 && cb_parse_size("4iB", &b) == -1);
    CHECK(cb_parse_size("1.5G", &b) == -1);
    CHECK(cb_parse_size("-1", &b) == -1);
    CHECK(cb_parse_size("", &b) == -1);
    CHECK(cb_parse_size("12Q", &b) == -1);
    CHECK(cb_parse_size("99999999999T", &b) == -1); /* overflows 64 bits */
    CHECK(cb_parse_duration("10", &s) == 0 && s == 10);
    CHECK(cb_parse_duration("2.5s", &s) == 0 && s == 2.5);
    CHECK(cb_parse_duration("500ms", &s) == 0 && fabs(s - 0.5) < 1e-12);
    CHECK(cb_parse_duration("5m", &s) == 0 && s == 300);
    CHECK(cb_parse_duration("250us", &s) == 0 && fabs(s - 250e-6) < 1e-15);
    CHECK(cb_parse_duration("1h", &s) == 0 && s == 3600);
    CHECK(cb_parse_duration("1d", &s) == 0 && s == 86400);
    CHECK(cb_parse_duration("-3", &s) == -1);
    CHECK(cb_parse_duration("3 weeks", &s) == -1);
    CHECK(cb_parse_duration("nan", &s) == -1);
}

typedef struct demo_cfg {
    int count, flag, mode;
    double duration, rate;
    size_t chunk;
    const char *json;
    cb_intlist nodes;
    uint64_t key;
} demo_cfg;

static const char *const demo_modes[] = {"fast", "slow", NULL};
static const cb_opt demo_opts[] = {
    {.name = "count", .letter = 'n', .type = CB_OPT_INT, .off = offsetof(demo_cfg, count),
     .min = 1, .max = 100, .def = "4", .arg = "N", .help = "how many", .section = "Workload:"},
    {.name = "duration", .letter = 'd', .type = CB_OPT_DURATION, .off = offsetof(demo_cfg, duration),
     .min = 0.01, .max = 3600, .def = "10", .arg = "SECONDS", .help = "how long"},
    {.name = "rate", .type = CB_OPT_DOUBLE, .off = offsetof(demo_cfg, rate), .min = 0, .max = 1e6,
     .def = "2.5", .arg = "GBITS", .help = "rate\nsecond line"},
    {.name = "chunk", .type = CB_OPT_SIZE, .off = offsetof(demo_cfg, chunk), .min = 4096,
     .max = 1 << 30, .def = "4M", .arg = "BYTES", .help = "chunk"},
    {.name = "mode", .letter = 'm', .type = CB_OPT_CHOICE, .off = offsetof(demo_cfg, mode),
     .choices = demo_modes, .def = "fast", .arg = "MODE", .help = "fast or slow"},
    {.name = "nodes", .type = CB_OPT_INTLIST, .off = offsetof(demo_cfg, nodes), .min = 0,
     .max = 7, .arg = "LIST", .help = "nodes"},
    {.name = "key", .type = CB_OPT_U64, .off = offsetof(demo_cfg, key), .arg = "KEY", .help = "key"},
    {.name = "flag", .letter = 'f', .type = CB_OPT_FLAG, .off = offsetof(demo_cfg, flag), .help = "a flag"},
    CB_OPT_JSON_ROW(demo_cfg, json),
    {.letter = 't', .replaced_by = "duration"},
    {.name = "time", .replaced_by = "duration"},
    {0}};
static const cb_cmd demo_cmd = {.name = "demo", .test_version = "1.0", .opts = demo_opts,
                                .about = "A demo.\n", .more = "Exit status: 0.\n"};

static int parse_demo(demo_cfg *c, int argc, const char **argv)
{
    memset(c, 0, sizeof *c);
    return cb_opts_parse(&demo_cmd, c, argc, (char **)argv);
}

static void test_option_table(void)
{
    demo_cfg c;
    const char *none[] = {"demo", NULL};
    CHECK(parse_demo(&c, 1, none) == 1);
    CHECK(c.count == 4 && c.duration == 10 && c.rate == 2.5 && c.chunk == 4u << 20);
    CHECK(c.mode == 0 && c.flag == 0 && c.json == NULL && c.nodes.n == 0 && c.key == 0);
    CHECK(!cb_opts_given(&demo_cmd, "count") && !cb_opts_given(&demo_cmd, "duration"));

    const char *all[] = {"demo", "-n", "7", "--duration=5m", "--rate", "0.5", "--chunk", "64K",
                         "-m", "slow", "--nodes", "0-2,5", "--key", "0xff", "-f", "-j", "out.json",
                         NULL};
    CHECK(parse_demo(&c, 17, all) == 17);
    CHECK(c.count == 7 && c.duration == 300 && c.rate == 0.5 && c.chunk == 65536);
    CHECK(c.mode == 1 && c.flag == 1 && c.key == 255 && strcmp(c.json, "out.json") == 0);
    CHECK(c.nodes.n == 4 && c.nodes.v[0] == 0 && c.nodes.v[3] == 5);
    CHECK(cb_opts_given(&demo_cmd, "count") && cb_opts_given(&demo_cmd, "chunk"));
    CHECK(!cb_opts_given(&demo_cmd, "no-such-option"));

    /* --json -: the document alone on stdout, the human output on stderr */
    const char *to_stdout[] = {"demo", "-j", "-", NULL};
    CHECK(parse_demo(&c, 3, to_stdout) == 3 && cb_human() == stderr);
    const char *to_file[] = {"demo", "-j", "r.json", NULL};
    CHECK(parse_demo(&c, 3, to_file) == 3 && cb_human() == stdout);

    /* deprecated spellings set the new option (the note goes to stderr) */
    const char *old[] = {"demo", "-t", "7", NULL};
    CHECK(parse_demo(&c, 3, old) == 3 && c.duration == 7 && cb_opts_given(&demo_cmd, "duration"));
    const char *oldlong[] = {"demo", "--time=0.5h", NULL};
    CHECK(parse_demo(&c, 2, oldlong) == 2 && c.duration == 1800);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cb_opts_help(&demo_cmd, f);
    fclose(f);
    CHECK(strstr(text, "Usage: demo [OPTION]...\nA demo.\n") != NULL);
    CHECK(strstr(text, "\nWorkload:\n  -n, --count=N             how many (default 4)\n") != NULL);
    CHECK(strstr(text, "      --rate=GBITS          rate\n                            second line (default 2.5)\n") != NULL);
    CHECK(strstr(text, "  -f, --flag                a flag\n") != NULL);
    CHECK(strstr(text, "-t (now --duration)") != NULL && strstr(text, "--time (now --duration)") != NULL);
    CHECK(strstr(text, "  -h, --help") != NULL && strstr(text, "  -V, --version") != NULL);
    CHECK(strstr(text, "Exit status: 0.\n") != NULL);
    free(text);
}

/* Runs parse_demo in a child; returns its exit status (-1 when it returned). */
static int exit_of(int argc, const char **argv)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr) || !freopen("/dev/null", "w", stdout))
            _exit(99);
        demo_cfg c;
        parse_demo(&c, argc, argv);
        _exit(100);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? (WEXITSTATUS(st) == 100 ? -1 : WEXITSTATUS(st)) : -2;
}

static void test_option_errors(void)
{
    const char *bad[][3] = {
        {"demo", "-n", "0"},           {"demo", "-n", "x"},          {"demo", "-n", "101"},
        {"demo", "--duration", "0"},   {"demo", "--duration", "1w"}, {"demo", "--chunk", "1K"},
        {"demo", "--chunk", "2G"},     {"demo", "--chunk", "1.5M"},  {"demo", "-m", "medium"},
        {"demo", "--nodes", "0-8"},    {"demo", "--nodes", "a"},     {"demo", "--key", "-1"},
        {"demo", "--rate", "inf"},     {"demo", "-x", "1"},          {"demo", "--bogus", "1"},
        {"demo", "stray", "arg"},      {"demo", "--json=", ""},      {"demo", "-j", ""},
        /* nothing wraps, no NaN, no spaces or signs where a number belongs */
        {"demo", "--key", "18446744073709551616"}, {"demo", "--key", "+1"}, {"demo", "--key", " 1"},
        {"demo", "-n", "+5"},          {"demo", "-n", " 5"},         {"demo", "-n", "99999999999999999999"},
        {"demo", "--rate", "nan"},     {"demo", "--rate", "0x1p1"},  {"demo", "--rate", " 1"},
        {"demo", "--nodes", "0,,1"},   {"demo", "--nodes", "0,"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = exit_of(3, bad[i]);
        if (rc != 2)
            fprintf(stderr, "case %zu (%s %s): exit %d\n", i, bad[i][1], bad[i][2], rc);
        CHECK(rc == 2);
    }
    const char *missing[] = {"demo", "--count", NULL};
    CHECK(exit_of(2, missing) == 2);
    const char *help[] = {"demo", "--help", NULL};
    CHECK(exit_of(2, help) == 0);
    const char *version[] = {"demo", "-V", NULL};
    CHECK(exit_of(2, version) == 0);
    const char *good[] = {"demo", "-n", "3", NULL};
    CHECK(exit_of(3, good) == -1);
}

static void part_config(cb_json *j, const void *ctx)
{
    cbj_int(j, "count", *(const int *)ctx);
}
static void part_metrics(cb_json *j, const void *ctx)
{
    cbj_metric(j, test_metrics, "speed", 1.5);
}
static void part_compliance(cb_json *j, const void *ctx)
{
    cbj_int(j, "max_drops", 0);
}

/* A metric its kernel's table lacks is a programming error: exit 3, named. */
static void test_unknown_metric(void)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr))
            _exit(99);
        cb_json j;
        cbj_init(&j);
        cbj_obj_begin(&j, NULL);
        cbj_metric(&j, test_metrics, "speeed", 1.0);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == CB_EXIT_CANNOT_RUN);
    CHECK(cb_metric_find(test_metrics, "bad") == &test_metrics[1]);
    CHECK(cb_metric_find(test_metrics, "speeed") == NULL);
}

static void test_read_first_line(void)
{
    char path[] = "/tmp/cb-test-line-XXXXXX", buf[16];
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, "0x030000\nsecond\n", 16) == 16);
    close(fd);
    CHECK(cb_read_first_line(path, buf, sizeof buf) == 0 && strcmp(buf, "0x030000") == 0);
    CHECK(cb_read_first_line(path, buf, 5) == 0 && strcmp(buf, "0x03") == 0);
    fd = open(path, O_WRONLY | O_TRUNC);
    close(fd);
    CHECK(cb_read_first_line(path, buf, sizeof buf) == 0 && buf[0] == '\0');
    unlink(path);
    CHECK(cb_read_first_line(path, buf, sizeof buf) == -1);
}

static void test_envelope(void)
{
    char path[] = "/tmp/cb-test-envelope-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    int count = 3;
    cb_envelope env = {.test = "demo", .test_version = "1.0", .started = "2026-01-01T00:00:00Z",
                       .duration_s = 2, .threshold = NAN, .passed = 1};
    cb_doc_parts parts = {.config = part_config, .metrics = part_metrics,
                          .compliance = part_compliance};
    CHECK(cb_doc_write(path, &env, &parts, &count) == 0);
    const char *doc = slurp(path);
    CHECK(doc && strstr(doc, "\"test\": \"demo\"") && strstr(doc, "\"test_version\": \"1.0\""));
    CHECK(doc && strstr(doc, "\"config\": {\n    \"count\": 3"));
    CHECK(doc && strstr(doc, "\"metrics\": {\n    \"speed\": {\n      \"value\": 1.5,\n"
                              "      \"unit\": \"Gbit/s\""));
    CHECK(doc && strstr(doc, "\"threshold\": null") && strstr(doc, "\"max_drops\": 0") &&
          strstr(doc, "\"passed\": true"));
    /* every document says whether a signal cut the run short */
    CHECK(doc && strstr(doc, "\"duration_s\": 2,\n  \"interrupted\": false,\n"));
    env.interrupted = 1;
    CHECK(cb_doc_write(path, &env, &parts, &count) == 0);
    doc = slurp(path);
    CHECK(doc && strstr(doc, "\"interrupted\": true,\n"));
    unlink(path);
}

/* The first SIGINT, SIGTERM or SIGHUP only sets the flag (the kernel then stops and
 * reports); the exit code is a shell's for a death by that signal. */
static void test_signals(void)
{
    CHECK(cb_interrupted == 0 && cb_interrupted_name() == NULL);
    cb_signals_install();
    raise(SIGTERM);
    CHECK(cb_interrupted == SIGTERM && strcmp(cb_interrupted_name(), "SIGTERM") == 0);
    CHECK(cb_exit_interrupted() == 128 + SIGTERM && cb_exit_interrupted() >= CB_EXIT_INTERRUPTED_MIN);
    cb_interrupted = 0;
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
}

/* The one hash, pinned: every verified pattern and every random order of the kernels
 * comes from it, so a value that changed would change what they write and expect. The
 * first is splitmix64's published first output for seed 0. */
static void test_hash(void)
{
    CHECK(cb_mix64(0) == 0xe220a8397b1dcdafULL);
    CHECK(cb_mix64(1) == 0x910a2dec89025cc1ULL);
    CHECK(cb_mix64(0x123456789abcdefULL) == 0x157a3807a48faa9dULL);
    CHECK(cb_mix64(~0ULL) == 0xe4d971771b652c20ULL);
    CHECK(cb_mix64_final(0) == 0);
    CHECK(cb_mix64_final(42 + CB_GOLDEN_GAMMA) == cb_mix64(42));
}

int main(void)
{
    test_hash();
    test_strict_numbers();
    test_signals();
    test_intlist();
    test_json();
    test_results_block();
    test_clock();
    test_sizes_durations();
    test_option_table();
    test_option_errors();
    test_envelope();
    test_read_first_line();
    test_unknown_metric();
    CBT_DONE();
}
