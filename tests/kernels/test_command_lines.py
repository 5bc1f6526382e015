"""Every kernel's command line, held to what it was: its --help and --version text, and for
a set of bad command lines (an unknown option, a missing value, a value that is not a
number, one below or above each option's range) the exit status and the message. The
record is tests/data/kernels/command-lines.json; a change of the option tables or of the
option parser that changes any of it fails here. After a change made on purpose, write the
record again and review its diff:

    COBALT_WRITE_COMMAND_LINES=1 .venv/bin/python -m pytest tests/kernels/test_command_lines.py
"""

import json
import os
import subprocess

import pytest

from plugins.checkout import ROOT, repo_version

RECORD = os.path.join(ROOT, 'tests', 'data', 'kernels', 'command-lines.json')
BINARIES = ('mem-test', 'cb-linktest', 'eth-test-send', 'eth-test-receive', 'gpu-copy',
            'cb-pcie-links', 'smp-mad-stress', 'smp-mad-stress-mpi', 'cpu-test')
NUMBERS = ('int', 'long', 'u64', 'double', 'size', 'duration')


def run(binary, *args):
    proc = subprocess.run([os.path.join(ROOT, 'bin', binary), *args], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout.replace(repo_version(), 'VERSION'), proc.stderr


def _beyond(value, step):
    number = value + step
    return str(int(number)) if float(number).is_integer() else repr(number)


def bad_command_lines(description):
    '''The bad command lines tried on a kernel, derived from its options: each of them
    should exit 2 before anything is measured.'''
    lines = [['--bogus'], ['-'], ['stray-operand']]
    for opt in description['options']:
        if opt['argument'] is None or opt['name'] == 'json':
            continue
        if not opt['argument_optional']:
            lines.append([f'--{opt["name"]}'])                   # its value missing
        if opt['type'] in NUMBERS:
            lines.append([f'--{opt["name"]}', 'x1'])              # not a number
            if opt['min'] is not None:
                lines.append([f'--{opt["name"]}', _beyond(opt['min'], -1)])
                lines.append([f'--{opt["name"]}', _beyond(opt['max'], opt['max'] or 1)])
    return lines


def observed(binary):
    _, described, _ = run(binary, '--describe')
    record = {'help': run(binary, '--help'), 'version': run(binary, '--version'),
              'bad': {}}
    for line in bad_command_lines(json.loads(described)):
        record['bad'][' '.join(line)] = run(binary, *line)
    return json.loads(json.dumps(record))         # tuples as the record's lists


def present(binary):
    if not os.access(os.path.join(ROOT, 'bin', binary), os.X_OK):
        pytest.skip(f'bin/{binary} is not built here (make says what it lacks)')


@pytest.mark.parametrize('binary', BINARIES)
def test_a_kernels_command_line_is_as_recorded(binary):
    present(binary)
    now = observed(binary)
    if os.environ.get('COBALT_WRITE_COMMAND_LINES'):
        record = json.load(open(RECORD)) if os.path.exists(RECORD) else {}
        record[binary] = now
        with open(RECORD + '.tmp', 'w') as fp:
            json.dump(record, fp, indent=1, sort_keys=True)
            fp.write('\n')
        os.replace(RECORD + '.tmp', RECORD)
    recorded = json.load(open(RECORD))[binary]
    assert now['help'] == recorded['help']
    assert now['version'] == recorded['version']
    for line, result in recorded['bad'].items():
        assert now['bad'].get(line) == result, line
    assert set(now['bad']) == set(recorded['bad'])
    # Every bad command line is a usage error, said on stderr.
    assert all(code == 2 and err for code, _, err in now['bad'].values()), now['bad']
