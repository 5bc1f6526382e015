'''Writing a report: the set of its files whole or not at all (cobalt_bench.fileio): a
reader never sees half a report, nor files of two reports, and a failed or interrupted
write leaves the earlier one as it was.

The report directory (RUN/report by default) and its plots/ are never symbolic links: in
a shared store a link planted there would have the report written wherever it points.
A link is refused (CannotRun, nothing written); the files themselves are replaced by a
rename, which never follows a link.'''

import json
import os
import shutil
import tempfile

from ..errors import CannotRun
from ..fileio import atomic_file, replace_dir, umask, write_atomic
from .fleet import BAD_NODES_FILE, bad_nodes_text
from .html import render_html
from .markdown import render_markdown


def _own_dir(path):
    '''Make the directory `path` (and its parents); CannotRun if it is a symbolic link
    or something else than a directory.'''
    if os.path.islink(path):
        raise CannotRun(f'{path} is a symbolic link (to {os.readlink(path)}): the report is '
                        'not written through it; remove it, or name another directory (-o)')
    os.makedirs(path, exist_ok=True)
    if os.path.islink(path) or not os.path.isdir(path):
        raise CannotRun(f'{path} is not a directory: the report is not written there')


#: What a report directory holds: a directory of other files is never replaced whole.
OWN = frozenset({'report.md', 'report.html', 'verdict.json', BAD_NODES_FILE, 'plots'})


def _files(model, out_dir, formats):
    '''[(name relative to the report directory, bytes or text)] of the report.'''
    files = []
    # The text first: the plots' images are drawn meanwhile (report.drawing), and waited
    # for where the Markdown shows them.
    if 'md' in formats:
        files.append(('report.md', render_markdown(model, out_dir=out_dir)))
    if 'html' in formats:
        files.append(('report.html', render_html(model, out_dir=out_dir)))
    if 'md' in formats:
        files += [(os.path.join('plots', p.name + '.png'), p.png) for p in model.plots
                  if p.png]
    if model.judgement is not None:
        # The verdict for programs: state first, then the reasons and items; the flaky
        # nodes (the store's node history), apart from this run's bad nodes.
        verdict = {**model.judgement.to_json(),
                   'flaky_nodes': [f.to_json() for f in model.flaky]}
        files.append(('verdict.json', _Json(verdict)))
        # Always written (a comment only when no node is bad): a list of an earlier
        # report is never left behind to be drained.
        files.append((BAD_NODES_FILE, bad_nodes_text(model)))
    return files


class _Json:
    '''A file's JSON content, written as it is encoded: verdict.json of a 10,000-node sweep
    is 38 MB, which json.dumps would hold all at once. The top object has one key a line,
    and each element of a list one line of its own (compact, by the stdlib's C encoder):
    with an indent the stdlib encodes in pure Python, 6 s for that file; this way, a
    fraction of a second, and still a file to read with less or diff line by line.'''
    BATCH = 4096      # lines per write

    def __init__(self, obj):
        self.obj = obj

    def write(self, path):
        with atomic_file(path, 'w') as fp:
            for chunk in _json_chunks(self.obj, self.BATCH):
                fp.write(chunk)


def _json_chunks(obj, batch):
    '''`obj` as JSON text in pieces of at most `batch` lines: a dict's keys one a line,
    a list value's elements one a line; every value encoded by the C encoder.'''
    encode = json.JSONEncoder().encode      # indent=None: the C encoder
    if not isinstance(obj, dict) or not obj:
        yield encode(obj) + '\n'
        return
    lines = ['{']
    last = len(obj) - 1
    for n, (key, value) in enumerate(obj.items()):
        end = '' if n == last else ','
        if isinstance(value, list) and value:
            lines.append(f'  {encode(str(key))}: [')
            for i, element in enumerate(value):
                lines.append('    ' + encode(element) + (',' if i < len(value) - 1 else ''))
                if len(lines) >= batch:
                    yield '\n'.join(lines) + '\n'
                    lines.clear()
            lines.append('  ]' + end)
        else:
            lines.append(f'  {encode(str(key))}: {encode(value)}{end}')
    lines.append('}')
    yield '\n'.join(lines) + '\n'


def _write(path, data):
    '''Write one file of the report whole or not at all.'''
    if isinstance(data, _Json):
        data.write(path)
    else:
        write_atomic(path, data)


def _keep_others(out_dir, staged, written):
    '''The earlier report's files this one does not write (`report --format md` leaves the
    HTML page as it was) go into the new set unchanged: linked, not copied.'''
    if not os.path.isdir(out_dir) or os.path.islink(out_dir):
        return
    for name in sorted(set(os.listdir(out_dir)) & OWN - written):
        src, dst = os.path.join(out_dir, name), os.path.join(staged, name)
        if os.path.islink(src):
            continue            # a planted link is never carried over
        if os.path.isdir(src):
            shutil.copytree(src, dst, symlinks=True, copy_function=_link)
        else:
            _link(src, dst)


def _link(src, dst):
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def write_report(model, out_dir, formats):
    '''Write the report into `out_dir` as one set: written into a directory beside it and
    put in its place in one step (fileio.replace_dir), so that a kill (Slurm's SIGTERM at a
    time limit) leaves the earlier report or this one, never a report.md of one beside a
    verdict.json of the other. A directory holding other files than a report's (-o DIR)
    gets each file replaced, the verdict first. Returns the paths written.'''
    try:
        files = _files(model, out_dir, formats)
        if os.path.isdir(out_dir) and not os.path.islink(out_dir) and \
                not set(os.listdir(out_dir)) <= OWN:
            _own_dir(out_dir)
            for name, data in sorted(files, key=lambda f: f[0] not in ('verdict.json',
                                                                         BAD_NODES_FILE)):
                if os.path.dirname(name):
                    _own_dir(os.path.join(out_dir, os.path.dirname(name)))
                _write(os.path.join(out_dir, name), data)
        else:
            _own_dir(os.path.dirname(os.path.abspath(out_dir)))
            if os.path.islink(out_dir):
                _own_dir(out_dir)       # refused, named
            parent, base = os.path.split(os.path.abspath(out_dir))
            # what a writer killed before it could clean up left (SIGKILL, SIGTERM)
            for left in os.listdir(parent):
                if left.startswith((f'.new-{base}-', f'.old-{base}-')):
                    shutil.rmtree(os.path.join(parent, left), ignore_errors=True)
            staged = tempfile.mkdtemp(dir=parent, prefix=f'.new-{base}-')
            try:
                for name, data in files:
                    os.makedirs(os.path.join(staged, os.path.dirname(name)), exist_ok=True)
                    _write(os.path.join(staged, name), data)
                _keep_others(out_dir, staged, {n.split(os.sep)[0] for n, _ in files})
                os.chmod(staged, 0o777 & ~umask())
                replace_dir(staged, out_dir)
            except BaseException:
                shutil.rmtree(staged, ignore_errors=True)
                raise
    except OSError as err:
        raise CannotRun(f'cannot write the report in {out_dir}: {err}')
    return [os.path.join(out_dir, name) for name, _ in files if not name.startswith('plots')]
