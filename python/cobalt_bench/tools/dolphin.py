'''Parsers and verdicts for Dolphin PCIe interconnect tools (Dolphin eXpressWare), as the
manual's "Verifying Functionality and Performance" chapter uses them:

- dis_diag (static test): passes only with ``TEST RESULT: *PASSED*``, zero errors, and the
  same set of nodes seen from every node;
- sciconntest (load test): every remote node found, zero failures for each;
- dma_bench, scipp, intr_bench (performance): tables and figures, judged by references.

Only the standard library: the ReFrame checks (reframe_checks/dolphin.py) and the Slurm
jobs (jobs/dolphin-*.slurm, through cobalt_bench.cli.dolphin) use it.

    python3 -m cobalt_bench.cli.dolphin dis_diag FILE...     verdict, one output per node
    python3 -m cobalt_bench.cli.dolphin sciconntest [--expect-nodes 4,8,12] FILE...
    python3 -m cobalt_bench.cli.dolphin dma_bench|scipp|intr_bench FILE   figures, JSON
'''

import re


class DolphinParseError(ValueError):
    '''An output that is not what the tool prints.'''


def _int(text):
    return int(text, 10)


# ---- dis_diag ------------------------------------------------------------------------

def parse_dis_diag(text):
    '''One dis_diag output -> dict:
    result: 'PASSED', 'FAILED' (or whatever stands between the asterisks), None if absent;
    notes, warnings, errors: the "dis_diag discovered N ..." counts (None if absent);
    local_nodes: NodeIds of the local adapters; adapters_found: from the topology section;
    nodes_detected: set of NodeIds seen (None if no "Nodes detected" line);
    sessions: {node: status}; messages: the OK:/[WARN]/ERROR lines.'''
    result = None
    m = re.search(r'^TEST RESULT:\s*\*(\w+)\*\s*$', text, re.M)
    if m:
        result = m.group(1)

    counts = {}
    for kind in ('note', 'warning', 'error'):
        m = re.search(rf'^dis_diag discovered (\d+) {kind}\(s\)\.', text, re.M)
        counts[kind + 's'] = _int(m.group(1)) if m else None

    nodes = None
    detected = re.findall(r'^Nodes detected:\s*(.*)$', text, re.M)
    if detected:
        nodes = set()
        for line in detected:       # one per adapter: the union is what this node sees
            for tok in line.split():
                if not tok.isdigit():
                    raise DolphinParseError(f'dis_diag: bad node id {tok!r} in "Nodes detected"')
                nodes.add(_int(tok))

    found = [int(x) for x in re.findall(r'^Adapters found:\s*(\d+)', text, re.M)]
    if not (result or nodes is not None or any(v is not None for v in counts.values())):
        raise DolphinParseError('not a dis_diag output (no test result, counts or topology)')

    return {
        'result': result,
        **counts,
        'local_nodes': [int(x) for x in re.findall(r'^\s*NodeId\s*:\s*(\d+)', text, re.M)],
        'adapters_found': sum(found) if found else None,
        'nodes_detected': nodes,
        'sessions': {int(n): s.strip() for n, s in
                     re.findall(r'^Node (\d+):\s*(Session .*)$', text, re.M)},
        'messages': re.findall(r'^((?:OK:|\[WARN\]|\[ERROR\]|ERROR:|WARNING:).*)$', text,
                               re.M),
    }


def judge_dis_diag(outputs):
    '''outputs: {node name: dis_diag output}. Returns (passed, problems, parsed).
    Passed: every output says TEST RESULT: *PASSED* with 0 errors, and every node sees the
    same set of nodes, which includes each node's own adapters.'''
    problems, parsed = [], {}
    if not outputs:
        return False, ['no dis_diag output'], parsed

    for host, text in outputs.items():
        try:
            d = parsed[host] = parse_dis_diag(text)
        except DolphinParseError as err:
            problems.append(f'{host}: {err}')
            continue

        if d['result'] != 'PASSED':
            problems.append(f'{host}: TEST RESULT is '
                            f'{"*" + d["result"] + "*" if d["result"] else "missing"}, '
                            'not *PASSED*')
        if d['errors'] is None:
            problems.append(f'{host}: no error count ("dis_diag discovered N error(s).")')
        elif d['errors']:
            problems.append(f'{host}: dis_diag discovered {d["errors"]} error(s)')
        if d['nodes_detected'] is None:
            problems.append(f'{host}: no "Nodes detected" list (topology not reported)')

    seen = {h: d['nodes_detected'] for h, d in parsed.items()
            if d['nodes_detected'] is not None}
    if len(set(map(frozenset, seen.values()))) > 1:
        views = '; '.join(f'{h}: {ids(s)}' for h, s in sorted(seen.items()))
        problems.append(f'the nodes do not see the same topology: {views}')
    for host, d in parsed.items():
        for other, nodes in seen.items():
            missing = set(d['local_nodes']) - nodes
            if missing:
                problems.append(f'{other} does not see {host} (node {ids(missing)})')

    return not problems, problems, parsed


def ids(nodes):
    return ' '.join(str(n) for n in sorted(nodes)) or '(none)'


# ---- sciconntest -------------------------------------------------------------------

def parse_sciconntest(text):
    '''One sciconntest output -> dict: local_node, loops, nodes_found, errors (the report's
    counters), nodes: {node: {'found': bool, 'failures': int, 'longest_failure_ms': float}},
    responses: nodes that answered the probe.'''
    m = re.search(r'^\s*SCICONNTEST_REPORT\s*$(.*?)^\s*SCICONNTEST_REPORT_END\s*$', text,
                  re.M | re.S)
    if not m:
        raise DolphinParseError('not a complete sciconntest output (no SCICONNTEST_REPORT ... '
                                'SCICONNTEST_REPORT_END)')
    report = m.group(1)

    def counter(name):
        c = re.search(rf'^\s*{name}\s+(\d+)\s*$', report, re.M)
        if not c:
            raise DolphinParseError(f'sciconntest report lacks {name}')
        return _int(c.group(1))

    nodes = {}
    for node, status in re.findall(r'^\s*node (\d+) : (Found|Not found|[A-Za-z ]+?)\s*$',
                                   report, re.M):
        nodes.setdefault(int(node), {'found': False, 'failures': None,
                                     'longest_failure_ms': None})
        nodes[int(node)]['found'] = status == 'Found'
    for node, n in re.findall(r'^\s*node (\d+) : Number of failures : (\d+)', report, re.M):
        nodes.setdefault(int(node), {'found': False, 'failures': None,
                                     'longest_failure_ms': None})['failures'] = _int(n)
    for node, ms in re.findall(r'^\s*node (\d+) : Longest failure\s*:\s*([\d.]+)', report,
                               re.M):
        nodes.setdefault(int(node), {'found': False, 'failures': None,
                                     'longest_failure_ms': None})['longest_failure_ms'] = float(ms)

    local = re.search(r'^\s*Local node-id\s*:\s*(\d+)', text, re.M)
    return {
        'local_node': _int(local.group(1)) if local else None,
        'loops': counter('NUM_TESTLOOPS_EXECUTED'),
        'nodes_found': counter('NUM_NODES_FOUND'),
        'errors': counter('NUM_ERRORS_DETECTED'),
        'nodes': nodes,
        'responses': [int(n) for n in re.findall(r'^\s*Response from remote node (\d+)', text,
                                                 re.M)],
    }


def judge_sciconntest(outputs, expected_nodes=None):
    '''outputs: {node name: sciconntest output}; expected_nodes: the cluster's NodeIds (if
    known). Returns (passed, problems, parsed). Passed: each report has 0 errors, lists
    every remote node as Found with 0 failures, and finds every other node: those in
    expected_nodes, and those whose own output names them as its local node.'''
    problems, parsed = [], {}
    if not outputs:
        return False, ['no sciconntest output'], parsed

    for host, text in outputs.items():
        try:
            parsed[host] = parse_sciconntest(text)
        except DolphinParseError as err:
            problems.append(f'{host}: {err}')

    everyone = set(expected_nodes or ())
    everyone |= {d['local_node'] for d in parsed.values() if d['local_node'] is not None}
    for host, d in parsed.items():
        if d['loops'] < 1:
            problems.append(f'{host}: no test loop executed')
        if d['errors']:
            problems.append(f'{host}: NUM_ERRORS_DETECTED {d["errors"]}')
        found = {n for n, s in d['nodes'].items() if s['found']}
        for node, s in sorted(d['nodes'].items()):
            if not s['found']:
                problems.append(f'{host}: node {node} not found')
            if s['failures'] is None:
                problems.append(f'{host}: node {node}: no failure count')
            elif s['failures']:
                problems.append(f'{host}: node {node}: {s["failures"]} failures '
                                f'(longest {s["longest_failure_ms"]} ms)')
        if d['nodes_found'] != len(found):
            problems.append(f'{host}: NUM_NODES_FOUND {d["nodes_found"]} but '
                            f'{len(found)} nodes reported found')
        missing = everyone - found - {d['local_node']}
        if missing:
            problems.append(f'{host}: remote node(s) {ids(missing)} not found')
        if not d['nodes']:
            problems.append(f'{host}: no remote node in the report')

    return not problems, problems, parsed


# ---- performance tools ---------------------------------------------------------------

_NUM = r'(\d+(?:\.\d+)?)'


def parse_dma_bench(text):
    '''dma_bench client output -> rows of {message_size, total_size, vector_length,
    transfer_time_us, time_per_message_us, bandwidth_mbps} (MBytes/s = 10^6 B/s, as
    total size / transfer time shows). Rows whose bandwidth is not total size / transfer
    time (within 1%) are an error: the table is not what dma_bench measured.'''
    rows = []
    pattern = re.compile(rf'^\s*(\d+)\s+(\d+)\s+(\d+)\s+{_NUM}\s*us\s+{_NUM}\s*us\s+{_NUM}\s*'
                         r'MBytes/s\s*$', re.M)
    for m in pattern.finditer(text):
        row = {
            'message_size': _int(m.group(1)),
            'total_size': _int(m.group(2)),
            'vector_length': _int(m.group(3)),
            'transfer_time_us': float(m.group(4)),
            'time_per_message_us': float(m.group(5)),
            'bandwidth_mbps': float(m.group(6)),
        }
        expect = row['total_size'] / row['transfer_time_us']    # bytes/us = MB/s
        if abs(expect - row['bandwidth_mbps']) > 0.01 * expect:
            raise DolphinParseError(
                f'dma_bench: {row["message_size"]} B: {row["bandwidth_mbps"]} MBytes/s is not '
                f'{row["total_size"]} B / {row["transfer_time_us"]} us')
        rows.append(row)
    if not rows:
        raise DolphinParseError('not a dma_bench output (no bandwidth table)')
    return rows


def parse_scipp(text):
    '''scipp client output -> rows of {size, retries, latency_us, half_latency_us}
    (round trip and half round trip).'''
    m = re.search(r'^\s*size\s+retries\s+latency \(usec\)\s+latency/2 \(usec\)\s*$', text,
                  re.M)
    if not m:
        raise DolphinParseError('not a scipp output (no "Ping Pong" table header)')
    rows = []
    for r in re.finditer(rf'^\s*(\d+)\s+(\d+)\s+{_NUM}\s+{_NUM}\s*$', text[m.end():], re.M):
        row = {'size': _int(r.group(1)), 'retries': _int(r.group(2)),
               'latency_us': float(r.group(3)), 'half_latency_us': float(r.group(4))}
        if abs(row['latency_us'] / 2 - row['half_latency_us']) > 0.0015:
            raise DolphinParseError(f'scipp: {row["size"]} B: latency/2 {row["half_latency_us"]}'
                                    f' is not half of {row["latency_us"]}')
        rows.append(row)
    if not rows:
        raise DolphinParseError('scipp: empty ping-pong table')
    return rows


def parse_intr_bench(text):
    '''intr_bench client output -> {unidirectional_us, round_trip_us}.'''
    uni = re.search(rf'^Average unidirectional interrupt time\s*:\s*{_NUM}\s*us', text, re.M)
    rtt = re.search(rf'^Average round trip\s+interrupt time\s*:\s*{_NUM}\s*us', text, re.M)
    if not uni or not rtt:
        raise DolphinParseError('not an intr_bench output (no average interrupt times)')
    return {'unidirectional_us': float(uni.group(1)), 'round_trip_us': float(rtt.group(1))}


#: The performance tools' parsers, by tool.
PARSERS = {'dma_bench': parse_dma_bench, 'scipp': parse_scipp, 'intr_bench': parse_intr_bench}
