/* Unit tests of src/common: option lists, JSON document, atomic writes,
 * results block, clock and hwloc topology. */
#include "cb_test.h"
#include "common/cb_common.h"

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
    cbj_metric(&j, "speed", 0.1, "Gbit/s");
    cbj_metric(&j, "bad", 0.0 / 0.0, "x");
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

static void test_topology(void)
{
    cb_topo t;
    CHECK(cb_topo_load(&t) == 0);
    CHECK(t.nnodes >= 1);
    int cores = 0;
    for (int i = 0; i < t.nnodes; i++) {
        cores += t.nodes[i].ncores;
        CHECK(t.nodes[i].npus >= t.nodes[i].ncores);
        CHECK(cb_topo_node(&t, t.nodes[i].os_index) == &t.nodes[i]);
    }
    CHECK(cores >= 1 && cores <= sysconf(_SC_NPROCESSORS_ONLN));
    CHECK(cb_topo_node(&t, 99999) == NULL);
    const cb_numa *n = &t.nodes[0];
    void *p = cb_alloc_on_node(&t, n->os_index, 1 << 20);
    CHECK(p != NULL);
    if (p) {
        memset(p, 1, 1 << 20);
        cb_free_on_node(&t, p, 1 << 20);
    }
    CHECK(cb_bind_thread_to_pu(&t, n->core_pu[0]) == 0);
    cb_topo_free(&t);
}

int main(void)
{
    test_intlist();
    test_json();
    test_results_block();
    test_clock();
    test_topology();
    CBT_DONE();
}
