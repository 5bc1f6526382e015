'''The Python package's layers (docs/architecture.md, its "Layers" table): a module imports
only from its own layer or a lower one, and nothing in cobalt_bench imports in a circle.
Every import counts, those inside functions included (they hid the last cycles).

The result words (pass, fail, ...) are spelled only in store/result.py: everything else
names them through its enums.
'''

import ast
import re

import pytest

from plugins.checkout import REPO_ROOT as ROOT
from plugins.graphs import cycles

PACKAGE = ROOT / 'python' / 'cobalt_bench'
ARCHITECTURE = ROOT / 'docs' / 'architecture.md'


def layer_table(text):
    '''{name: layer number} from the "Layers" table of docs/architecture.md: rows
    `| N | `a`, `b` | ... |` ('cobalt_bench' is the package's own __init__).'''
    layers = {}
    for line in text.split('## Layers', 1)[1].splitlines():
        m = re.match(r'\|\s*(\d+)\s*\|([^|]*)\|', line)
        if m:
            for name in re.findall(r'`([\w.]+)`', m.group(2)):
                layers[name] = int(m.group(1))
    return layers


def module_name(path):
    rel = path.relative_to(PACKAGE.parent).with_suffix('')
    parts = list(rel.parts)
    if parts[-1] == '__init__':
        parts.pop()
    return '.'.join(parts)


def imports_of(path, modules):
    '''The cobalt_bench modules `path` imports, anywhere in it: a `from X import Y` counts
    X.Y where that is a module, else X.'''
    name = module_name(path)
    package = name if path.name == '__init__.py' else name.rsplit('.', 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith('cobalt_bench'))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split('.')
                base = base[:len(base) - node.level + 1]
                target = '.'.join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ''
            if not target.startswith('cobalt_bench'):
                continue
            for alias in node.names:
                sub = f'{target}.{alias.name}'
                found.add(sub if sub in modules else target)
    return found - {name}


def graph():
    paths = sorted(PACKAGE.rglob('*.py'))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) for p in paths}


def layer_of(module, layers):
    '''The layer of a module: its first name under cobalt_bench (the package's own
    __init__ is 'cobalt_bench').'''
    parts = module.split('.')
    key = parts[1] if len(parts) > 1 else 'cobalt_bench'
    return layers.get(key)


def upward_imports(edges, layers):
    return sorted(f'{src} (layer {layer_of(src, layers)}) imports {dst} '
                  f'(layer {layer_of(dst, layers)})'
                  for src, targets in edges.items() for dst in targets
                  if layer_of(dst, layers) > layer_of(src, layers))


LAYERS = layer_table(ARCHITECTURE.read_text())
EDGES = graph()


def test_the_checker_finds_upward_imports_and_cycles():
    # The measure itself, on a made-up package: store imports report (up), and a circle.
    layers = {'store': 4, 'report': 9, 'judging': 7}
    edges = {'cobalt_bench.store.reader': {'cobalt_bench.report.model'},
             'cobalt_bench.report.model': {'cobalt_bench.judging.verdict'},
             'cobalt_bench.judging.verdict': {'cobalt_bench.judging.judge'},
             'cobalt_bench.judging.judge': {'cobalt_bench.judging.verdict'}}
    assert upward_imports(edges, layers) == [
        'cobalt_bench.store.reader (layer 4) imports cobalt_bench.report.model (layer 9)']
    assert cycles(edges) == [['cobalt_bench.judging.judge', 'cobalt_bench.judging.verdict']]


def test_every_module_has_a_layer():
    assert len(LAYERS) >= 11, f'the Layers table of {ARCHITECTURE} was not read: {LAYERS}'
    assert len(EDGES) > 50, 'the package was not found'
    missing = sorted(m for m in EDGES if layer_of(m, LAYERS) is None)
    assert not missing, f'modules of no layer of {ARCHITECTURE}: {missing}'


def test_imports_go_only_downward():
    bad = upward_imports(EDGES, LAYERS)
    assert not bad, '\n'.join(bad)


def test_no_import_cycle():
    assert not cycles(EDGES), cycles(EDGES)


# The result words as string literals: a quoted word, alone.
RESULT_WORDS = ('pass', 'fail', 'xfail', 'xpass', 'skip', 'abort', 'error', 'damaged',
                'unjudged', 'unknown', 'recorded', 'warn', 'complete', 'partial', 'running')
_LITERAL = re.compile(r'''(['"])(%s)\1''' % '|'.join(RESULT_WORDS))


# tools/ reads third-party programs' own words (dis_diag's "error" lines): their
# vocabulary, not a result of ours.
NOT_RESULTS = (PACKAGE / 'store' / 'result.py', PACKAGE / 'tools')


def test_result_words_only_in_the_result_module():
    found = []
    for path in sorted(PACKAGE.rglob('*.py')):
        if any(path == p or p in path.parents for p in NOT_RESULTS):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if _LITERAL.search(line.split('#', 1)[0]):
                found.append(f'{path.relative_to(ROOT)}:{n}: {line.strip()}')
    assert not found, '\n'.join(found)


@pytest.mark.parametrize('bad', ["x = 'pass'", 'if r == "xfail":'])
def test_the_literal_finder_finds_them(bad):
    assert _LITERAL.search(bad)
