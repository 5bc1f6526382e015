'''The shape rules of the tree (issue 12), checked on every run so that they stay true:

- no C function in src/ is longer than 120 lines;
- nothing on the Python side edits sys.path to find our code;
- the product binaries carry no test code (symbols of a test fabric or a test switch);
- the Python side is one package, importable by name.
'''

import os
import re
import shutil
import subprocess
import sys

import pytest

from plugins.checkout import ROOT

MAX_FUNCTION_LINES = 120

# A function definition: a line at column 0 that names a function and is not a
# declaration, followed by its body, which opens with '{' (at the end of that line or at
# column 0 within the next lines) and closes with '}' at column 0 (the clang-format style
# of src/).
_HEADER = re.compile(r'^(?!typedef|struct|enum|union|#|static const|const)'
                     r'[A-Za-z_][\w\s\*]*?\b(\w+)\s*\(')


def c_functions(text):
    '''(name, first line, number of lines) of every function defined in C text.'''
    lines = text.split('\n')
    found, start, name = [], None, None
    for i, line in enumerate(lines):
        if start is None:
            m = _HEADER.match(line)
            if not m or line.rstrip().endswith(';'):
                continue
            for k in range(i, min(i + 12, len(lines))):
                if lines[k].startswith('{') or (k == i and line.rstrip().endswith('{')
                                                and '=' not in line):
                    start, name = i, m.group(1)
                    break
                if lines[k].rstrip().endswith(';'):
                    break
        elif line.startswith('}'):
            found.append((name, start + 1, i - start + 1))
            start = None
    return found


def source_files(top, endings):
    for d, dirs, files in os.walk(os.path.join(ROOT, top)):
        dirs[:] = [x for x in dirs if x != '__pycache__']
        for f in files:
            if f.endswith(endings):
                yield os.path.join(d, f)


def test_no_c_function_over_120_lines():
    # The measure itself first: a 3-line body, a prototype (no body) and a K&R-style brace.
    text = ('static int f(int a);\n'
            'static int f(int a)\n{\n    return a;\n}\n'
            'int g(void) {\n    return 1;\n}\n'
            'static const int table[] = {\n    1,\n};\n')
    assert c_functions(text) == [('f', 2, 4), ('g', 6, 3)], 'the finder is broken'
    long_ones = []
    count = 0
    for path in source_files('src', ('.c', '.cu', '.h')):
        with open(path, errors='replace') as fp:
            for name, line, n in c_functions(fp.read()):
                count += 1
                if n > MAX_FUNCTION_LINES:
                    long_ones.append(f'{os.path.relpath(path, ROOT)}:{line} {name}: {n} lines')
    assert count > 200, f'only {count} functions found: the finder is broken'
    assert not long_ones, '\n'.join(long_ones)


def test_no_sys_path_edits():
    offenders = []
    for top in ('reframe_checks', 'site-configs', 'python', 'bench', 'src'):
        for d, dirs, files in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [x for x in dirs if x != '__pycache__' and not x.endswith('.egg-info')]
            for f in files:
                path = os.path.join(d, f)
                try:
                    with open(path, errors='strict') as fp:
                        text = fp.read()
                except (UnicodeDecodeError, OSError):
                    continue  # binaries
                if (f.endswith(('.py', '.in')) or text.startswith('#!') and 'python' in
                        text.split('\n', 1)[0]) and 'sys.path' in text:
                    offenders.append(os.path.relpath(path, ROOT))
    assert not offenders, offenders


def test_package_imports_by_name():
    # The interpreter that runs the tests imports the checkout's package (bootstrap.sh
    # installs it editable): the parsers without ReFrame, the ReFrame side with it.
    code = ('import cobalt_bench, cobalt_bench.tools, cobalt_bench.reframe;'
            'print(cobalt_bench.__file__)')
    out = subprocess.run([sys.executable, '-c', code], text=True, capture_output=True,
                         cwd='/', timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == os.path.join(ROOT, 'python', 'cobalt_bench', '__init__.py')


@pytest.mark.parametrize('binary', ['smp-mad-stress', 'smp-mad-stress-mpi', 'cb-linktest',
                                    'mem-test', 'eth-test-send', 'eth-test-receive',
                                    'gpu-copy', 'cb-pcie-links', 'cpu-test'])
def test_product_binaries_carry_no_test_code(binary):
    path = os.path.join(ROOT, 'bin', binary)
    if not os.path.exists(path):
        pytest.skip(f'bin/{binary} is not built here (make says why)')
    if not shutil.which('nm'):
        pytest.skip('nm (binutils) is not installed')
    symbols = subprocess.run(['nm', path], text=True, capture_output=True, timeout=120).stdout
    assert symbols, f'nm found no symbols in {path}'
    named_as_test = [line for line in symbols.splitlines()
                     if re.search(r'(^|[ _])(test|tf)_|_test\b|test_fabric|zip64_force|force_zip64',
                                  line.split()[-1], re.IGNORECASE)]
    assert not named_as_test, named_as_test
