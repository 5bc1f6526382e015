"""Results stores built in a test's tmp_path from the recorded real run of tests/data/store
(ReFrame 4.10.4's report.json of a MemTest run, and that case's mem-test.json): one
MemTest case per node, named as ReFrame's --distribute names them
(`MemTest %.part=<system:partition> %.nid=<node>`, reframe/frontend/testgenerators.py),
each with its own kernel document. A helper module (no fixtures): imported by the tests
of node history and of derived references."""

import copy
import json
import os
import shutil

from cobalt_bench.store.result import Result
from plugins.checkout import DATA, ROOT

STORE_DATA = DATA / "store"
REPORT = json.loads((STORE_DATA / "report.json").read_text())
DOC = json.loads((STORE_DATA / "mem-test.json").read_text())
DESIRED = 8.0


def site_copy(where, name="local-slurm"):
    """A copy of site-configs/NAME (config.py, references.yaml, compliance.yaml) at
    WHERE/NAME, so that a test may rewrite its references.yaml."""
    dest = where / name
    dest.mkdir(parents=True)
    for f in ("config.py", "references.yaml", "compliance.yaml"):
        shutil.copy(os.path.join(ROOT, "site-configs", name, f), dest / f)
    return dest


def _testcase(run, i, node, speed, result, system, partition):
    tc = copy.deepcopy(REPORT["runs"][0]["testcases"][0])
    full = f"{system}:{partition}"
    out = run / "output" / system / partition / "builtin" / f"MemTest_{i}"
    tc.update(name=f"MemTest_{i}", unique_name=f"MemTest_{i}",
              display_name=f"MemTest %.part={full} %.nid={node}", system=system,
              partition=partition, result=str(result), job_nodelist=[node],
              outputdir=str(out), stagedir=str(run / "stage" / f"MemTest_{i}"),
              jobid=str(9000 + i))
    if result.failed:
        tc.update(fail_phase="performance", fail_reason="failed to meet reference")
    values = {"measured_speed": speed, "percent_of_desired": speed / DESIRED * 100,
              "desired_speed": DESIRED}
    perf = {}
    for key, entry in tc["perfvalues"].items():
        name = key.rsplit(":", 1)[1]
        entry = list(entry)
        if name in values:
            entry[0] = values[name]
            entry[5] = str(Result.FAIL if result.failed and name != "desired_speed"
                           else Result.PASS)
        perf[f"{full}:{name}"] = entry
    tc["perfvalues"] = perf
    doc = copy.deepcopy(DOC)
    doc["host"] = node
    for name, value in values.items():
        doc["metrics"][name]["value"] = value
    out.mkdir(parents=True, exist_ok=True)
    (out / "mem-test.json").write_text(json.dumps(doc))
    return tc


def reframe_run(results, run_id, nodes, site="local-slurm", system="local-slurm",
                partition="x86", retried=()):
    """results/SITE/RUN_ID, a complete ReFrame run: one MemTest case per item of `nodes`
    ({node: (measured_speed, Result)}), each on its node alone. `retried`: nodes whose
    case failed in a first try that a retry (ReFrame's --max-retries: a second entry of
    report.json's runs) passed."""
    run = results / site / run_id
    run.mkdir(parents=True)
    report = copy.deepcopy(REPORT)
    stamp = run_id.split("-")[0]
    report["session_info"].update(time_start=f"{stamp}+0000", prefix_output=str(run / "output"),
                                  prefix_stage=str(run / "stage"))
    cases = [_testcase(run, i, node, speed, result, system, partition)
             for i, (node, (speed, result)) in enumerate(sorted(nodes.items()))]
    report["runs"] = [{"num_cases": len(cases), "runid": 0, "testcases": cases}]
    if retried:
        first = [dict(tc, result=str(Result.FAIL), fail_phase="performance")
                 for tc in cases if tc["job_nodelist"][0] in retried]
        report["runs"][0]["testcases"] = [
            first[[f["unique_name"] for f in first].index(tc["unique_name"])]
            if tc["job_nodelist"][0] in retried else tc for tc in cases]
        report["runs"].append({"runid": 1, "testcases": [
            tc for tc in cases if tc["job_nodelist"][0] in retried]})
    report["session_info"]["num_cases"] = len(cases)
    (run / "report.json").write_text(json.dumps(report))
    return run


def stamp(day, hour=0):
    """A run id as scripts/run-suite names them: YYYYmmddTHHMMSS-<pid>."""
    return f"202611{day:02d}T{hour:02d}0000-{100 + day}"


# ---- a node sweep's directory of capacity documents (store.sweep) ----------------------

def unpaced_mem_test_doc(where, mem_test):
    """A real document of an unpaced mem-test run (`mem-test --max`, one station, 0.3 s),
    run now in WHERE with the binary MEM_TEST."""
    import subprocess
    out = where / "mem-test-max.json"
    proc = subprocess.run([mem_test, "--max", "--stations", "1", "--duration", "0.3",
                           "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr      # 1: below its built-in threshold
    doc = json.loads(out.read_text())
    assert doc["config"]["max"] is True
    return doc


def node_doc(doc, host, factor=1.0):
    """DOC as the document of HOST, its speeds times FACTOR (a planted slow node)."""
    doc = copy.deepcopy(doc)
    doc["host"] = host
    for name, m in doc["metrics"].items():
        if "speed" in name or name == "percent_of_desired":
            m["value"] *= factor
    return doc


def capacity_sweep(where, doc, factors, plan=("mem-capacity",), lose=(), jobid=7):
    """A node sweep's directory (store.sweep) at WHERE/node-sweep-JOBID: the allocation,
    each node's plan and its capacity document, speeds times FACTORS[node] (none for the
    nodes in LOSE)."""
    root = where / f"node-sweep-{jobid}"
    root.mkdir()
    (root / "allocation").write_text("".join(f"{n}\n" for n in factors))
    for node, factor in factors.items():
        (root / node).mkdir()
        (root / node / "plan").write_text("".join(f"{t}\n" for t in plan))
        if node not in lose:
            (root / node / f"mem-capacity-{jobid}.json").write_text(
                json.dumps(node_doc(doc, node, factor)))
    return root


def counting_loads(monkeypatch):
    """The runs store.history reads from their documents (its load_run), as a list of
    paths that grows as it reads."""
    from cobalt_bench.store import history
    loads = []
    real = history.load_run

    def counted(path):
        loads.append(path)
        return real(path)
    monkeypatch.setattr(history, "load_run", counted)
    return loads
