'''Size limits that keep each file one concern (issue 25): no Python module of the package
over 500 lines, no C source (.c, .cu, .h) under src/ over 800 lines. A file that is
mostly a table may be longer; it is named here, with why.'''

from plugins.checkout import REPO_ROOT as ROOT

PYTHON_MAX, C_MAX = 500, 800

# Tables excepted: {path relative to the tree: why it may be longer}. None today.
TABLES = {}


def _too_long(paths, limit):
    out = []
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        n = len(path.read_text(errors='replace').splitlines())
        if n > limit and rel not in TABLES:
            out.append(f'{rel}: {n} lines (limit {limit})')
    return out


def test_no_python_module_over_500_lines():
    modules = sorted((ROOT / 'python' / 'cobalt_bench').rglob('*.py'))
    assert len(modules) > 50, 'the package was not found'
    assert not _too_long(modules, PYTHON_MAX)


def test_no_c_source_over_800_lines():
    sources = sorted(p for p in (ROOT / 'src').rglob('*')
                     if p.suffix in ('.c', '.cu', '.h'))
    assert len(sources) > 40, 'src/ was not found'
    assert not _too_long(sources, C_MAX)


def test_the_limits_are_measured(tmp_path):
    # The measure itself: 3 lines against a limit of 2.
    (tmp_path / 'x.py').write_text('a\nb\nc\n')
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert _too_long([tmp_path / 'x.py'], 2) == ['x.py: 3 lines (limit 2)']
        assert _too_long([tmp_path / 'x.py'], 3) == []
    finally:
        ROOT = saved
