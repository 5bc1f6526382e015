'''`python3 -m cobalt_bench.cli.dolphin`: the Dolphin tools' outputs, read and judged
(cobalt_bench.tools.dolphin), for the Dolphin Slurm jobs.'''

import json
import os
import sys

from ..tools import dolphin

PROG = 'cobalt_bench.cli.dolphin'


def _read(paths):
    names = [os.path.basename(p) for p in paths]
    out = {}
    for p, name in zip(paths, names):
        with open(p, errors='replace') as fp:
            out[name if names.count(name) == 1 else p] = fp.read()
    return out


def main(argv):
    usage = (f'usage: python3 -m {PROG} dis_diag FILE... | sciconntest '
             '[--expect-nodes LIST] FILE... | dma_bench|scipp|intr_bench FILE')
    if len(argv) < 2:
        print(usage, file=sys.stderr)
        return 2
    what, args = argv[0], argv[1:]
    expected = None
    if what == 'sciconntest' and args and args[0] == '--expect-nodes':
        try:
            expected = {int(x) for x in args[1].split(',') if x}
        except (IndexError, ValueError):
            print(usage, file=sys.stderr)
            return 2
        args = args[2:]
    try:
        outputs = _read(args)
    except OSError as err:
        print(f'{PROG}: {err}', file=sys.stderr)
        return 2

    if what in ('dis_diag', 'sciconntest'):
        if what == 'dis_diag':
            passed, problems, parsed = dolphin.judge_dis_diag(outputs)
        else:
            passed, problems, parsed = dolphin.judge_sciconntest(outputs, expected)
        for host, d in sorted(parsed.items()):
            if what == 'dis_diag':
                print(f'{host}: TEST RESULT {d["result"]}, {d["errors"]} error(s), '
                      f'{d["warnings"]} warning(s), nodes detected '
                      f'{dolphin.ids(d["nodes_detected"] or ())}')
            else:
                failures = sum(s['failures'] or 0 for s in d['nodes'].values())
                print(f'{host}: local node {d["local_node"]}, {d["nodes_found"]} remote nodes '
                      f'found, {d["errors"]} errors, {failures} failures')
        for p in problems:
            print(f'PROBLEM: {p}')
        print(f'{what}: {"PASSED" if passed else "FAILED"}')
        return 0 if passed else 1

    if what in dolphin.PARSERS and len(outputs) == 1:
        try:
            print(json.dumps(dolphin.PARSERS[what](next(iter(outputs.values()))), indent=1))
        except dolphin.DolphinParseError as err:
            print(f'{PROG}: {err}', file=sys.stderr)
            return 1
        return 0

    print(usage, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
