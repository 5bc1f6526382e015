'''The checks of the suite, as the site's files name them: every @rfm.simple_test class
of reframe_checks/, read with `ast` (no check is imported, nothing of ReFrame runs).'''

import ast
import os
from dataclasses import dataclass

from .. import kernels, paths


@dataclass(frozen=True)
class CheckInfo:
    name: str                   # the check's class name (ReFrame's test name)
    kernel: str = ''            # its `kernel = '...'` (KernelJsonTest), if it names one
    file: str = ''


def checks_dir():
    '''The tree's reframe_checks/, or None; found once per $COBALT_BENCH_ROOT (the report
    asks for every case it judges).'''
    key = os.environ.get('COBALT_BENCH_ROOT')
    if key not in _CHECKS_DIR:
        data = paths.data_dir()
        path = os.path.join(data, 'reframe_checks') if data else None
        _CHECKS_DIR[key] = path if path and os.path.isdir(path) else None
    return _CHECKS_DIR[key]


_CHECKS_DIR = {}


_CHECKS_CACHE = {}


def known_checks(directory=None):
    '''{class name: CheckInfo} of every @rfm.simple_test class in reframe_checks/, read
    with `ast` (no check is imported, nothing of ReFrame runs). None: no reframe_checks/.'''
    directory = directory or checks_dir()
    if directory is None:
        return None
    if directory in _CHECKS_CACHE:
        return _CHECKS_CACHE[directory]
    found = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith('.py'):
            continue
        path = os.path.join(directory, name)
        try:
            with open(path, encoding='utf-8') as fp:
                tree = ast.parse(fp.read(), path)
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            if not any('simple_test' in ast.unparse(d) for d in node.decorator_list):
                continue
            kernel = ''
            for stmt in node.body:
                if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and
                        isinstance(stmt.targets[0], ast.Name) and
                        stmt.targets[0].id == 'kernel' and
                        isinstance(stmt.value, ast.Constant)):
                    kernel = str(stmt.value.value)
            found[node.name] = CheckInfo(node.name, kernel, path)
    _CHECKS_CACHE[directory] = found
    return found


def check_of_kernel(kernel, checks=None):
    '''The check class that runs `kernel` ('mem-test' -> 'MemTest', never its capacity
    check MemCapacity: kernels.check_of_document tells those documents apart); eth-test's
    documents come from eth-test-receive. None when no check runs it.'''
    checks = known_checks() if checks is None else checks
    for info in (checks or {}).values():
        if info.name in kernels.CAPACITY:
            continue    # its kernel's capacity mode (MemCapacity), not the kernel's check
        if info.kernel and (info.kernel == kernel or info.kernel == f'{kernel}-receive'):
            return info.name
    return None
