"""The C kernels in layers: within a kernel, no source file calls a function of a file that
calls one of its own back (directly or round a longer circle), as test_layers.py holds
the Python package. Read from what the build made (the objects' symbol tables, `nm`), so
a call through any header counts: which file defines a symbol and which files use it.
"""

import glob
import os
import shutil
import subprocess

import pytest

from plugins.checkout import ROOT
from plugins.graphs import cycles

BUILD = os.path.join(ROOT, 'build')
NOT_KERNELS = {'tests', 'aarch64', 'bench'}


def _symbols(obj, *flags):
    out = subprocess.run(['nm', *flags, obj], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}


def calls(objects):
    '''{file: the other files whose functions it calls}, for the objects of one program.'''
    defined = {}
    for obj in objects:
        for sym in _symbols(obj, '--defined-only', '--extern-only'):
            defined[sym] = os.path.basename(obj)[:-2]
    graph = {}
    for obj in objects:
        name = os.path.basename(obj)[:-2]
        graph[name] = {defined[s] for s in _symbols(obj, '--undefined-only')
                       if s in defined and defined[s] != name}
    return graph


def kernel_objects():
    '''{build directory: its objects}, one directory per program the build made.'''
    out = {}
    for d in sorted(glob.glob(os.path.join(BUILD, '*', ''))):
        objects = sorted(glob.glob(os.path.join(d, '*.o')))
        if objects and os.path.basename(d.rstrip('/')) not in NOT_KERNELS:
            out[os.path.basename(d.rstrip('/'))] = objects
    return out


def test_no_c_file_calls_round_a_circle():
    if not shutil.which('nm'):
        pytest.skip('nm (binutils) is not installed')
    kernels = kernel_objects()
    if not kernels:
        pytest.skip('nothing built: run make first')
    found = {k: cycles(calls(objs)) for k, objs in kernels.items()}
    assert {k: c for k, c in found.items() if c} == {}
    assert {'mem-test', 'cb-linktest', 'eth-test', 'gpu-copy'} & set(kernels)


def test_the_checker_finds_a_circle(tmp_path):
    if not (shutil.which('nm') and shutil.which('cc')):
        pytest.skip('nm and cc (binutils, gcc) are needed')
    sources = {'report': 'int stage(void); int report(void) { return stage(); }',
               'stage': 'int report(void); int stage(void) { return 1; }\n'
                        'int run(void) { return report(); }',
               'main': 'int run(void); int main(void) { return run(); }'}
    for name, text in sources.items():
        (tmp_path / f'{name}.c').write_text(text + '\n')
        subprocess.run(['cc', '-c', '-o', str(tmp_path / f'{name}.o'),
                        str(tmp_path / f'{name}.c')], check=True)
    objects = sorted(str(p) for p in tmp_path.glob('*.o'))
    graph = calls(objects)
    assert graph == {'main': {'stage'}, 'report': {'stage'}, 'stage': {'report'}}
    assert cycles(graph) == [['report', 'stage']]
    # The same files without the call back: layers, no circle.
    (tmp_path / 'stage.c').write_text('int stage(void) { return 1; }\n'
                                      'int run(void) { return stage(); }\n')
    subprocess.run(['cc', '-c', '-o', str(tmp_path / 'stage.o'), str(tmp_path / 'stage.c')],
                   check=True)
    assert cycles(calls(objects)) == []
