'''A command loads the modules it needs, not every command's (cli.COMMANDS: only the
command run has its parser built). A job step on every node of a sweep runs
`cobalt-bench --version` and `cobalt-bench judge`; on a node held to 1 % of a CPU each
loaded module was seconds (tests/integration/slurm/test_node_sweep.py).'''
import json
import subprocess
import sys

import pytest

from plugins.checkout import DATA, clean_env

# What the command prints, then the modules of cobalt_bench it had loaded, as JSON.
PROBE = '''
import json, sys
from cobalt_bench.cli import main
try:
    status = main(sys.argv[1:])
except SystemExit as end:
    status = end.code
sys.stdout.flush()
print(json.dumps(sorted(m for m in sys.modules if m.startswith('cobalt_bench'))))
sys.exit(status)
'''


def loaded(*argv):
    proc = subprocess.run([sys.executable, '-c', PROBE, *argv], env=clean_env(),
                          capture_output=True, text=True, timeout=120)
    return proc, set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_version_loads_no_command():
    proc, modules = loaded('--version')
    assert proc.returncode == 0 and 'cobalt-bench ' in proc.stdout, proc
    commands = {m for m in modules if m.split('.')[1:2] in (['judging'], ['store'],
                                                              ['report'], ['linktest'],
                                                              ['inventory'])}
    # cli.terminal shows text by report.format's one rule of what is shown
    assert not commands - {'cobalt_bench.report', 'cobalt_bench.report.format'}, \
        sorted(commands)
    assert 'cobalt_bench.cli.drain' not in modules, sorted(modules)


def test_judge_loads_no_report_or_other_command(tmp_path):
    doc = tmp_path / 'mem-test-7.json'
    doc.write_bytes((DATA / 'store' / 'mem-test.json').read_bytes())
    proc, modules = loaded('judge', '--site', 'local', str(doc))
    assert proc.returncode in (0, 1) and 'judged as' in proc.stdout, proc
    assert 'cobalt_bench.cli.judge' in modules
    others = {f'cobalt_bench.cli.{c}' for c in ('drain', 'health', 'nodes', 'references',
                                                'export', 'linktest_report', 'report')}
    assert not modules & others, sorted(modules & others)
    assert not {m for m in modules if m.startswith(('cobalt_bench.report.plots',
                                                    'cobalt_bench.linktest'))}


@pytest.mark.parametrize('argv', [['nodes', 'drain', '--help'], ['report', '--help'],
                                  ['references', 'derive', '--help']])
def test_a_command_help_is_its_full_parser(argv):
    proc, _ = loaded(*argv)
    assert proc.returncode == 0, proc
    assert proc.stdout.startswith(f'usage: cobalt-bench {" ".join(argv[:-1])} '), proc.stdout
    assert 'exit status' in proc.stdout, proc.stdout
