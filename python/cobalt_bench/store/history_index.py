'''The node history's index (issue 39): each finished run's node entries (store.history's
node_cases: node, check, partition, result, failed tries, key metrics, peers) and date,
kept in one SQLite file beside the results store, so that `cobalt-bench nodes` and the
report's flaky-node analysis over 100 runs of 1,000 nodes read a few rows per run instead
of each run's report.json and kernel documents.

The documents stay the truth: a run is taken from the index only while its report.json is
the one indexed (same size, modification time and inode); otherwise it is read again and
its entry replaced. A run without a report.json (partial, running) or one that cannot be
read is never indexed. The index is rebuilt from the documents when it is missing, of
another version, or damaged; where the store cannot be written, the runs are read without
one. Nothing else is written into the store.
'''

import json
import os
import sqlite3

from .runs import REPORT

#: The index file, at the top of the results store (a file: list_runs takes directories
#: only, so it is never a site).
INDEX_FILE = '.cobalt-bench-history.sqlite'
#: The layout of the index and of what it keeps: another is rebuilt.
VERSION = 1
#: How long a command waits for another that writes the index (then it goes on without).
BUSY_S = 2

_SCHEMA = (
    'CREATE TABLE IF NOT EXISTS runs (path TEXT PRIMARY KEY, stamp TEXT NOT NULL, '
    'date TEXT NOT NULL)',
    'CREATE TABLE IF NOT EXISTS entries (path TEXT NOT NULL, seq INTEGER NOT NULL, '
    'node TEXT NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (path, seq))',
)


class _Stale(Exception):
    '''The index file is not one of ours (damaged, another version): it is rebuilt.'''


def stamp_of(run_path):
    '''What identifies the content of a finished run: its report.json's size, mtime and
    inode ('' where it has none: not indexed).'''
    try:
        st = os.stat(os.path.join(run_path, REPORT))
    except OSError:
        return ''
    return f'{st.st_size}:{st.st_mtime_ns}:{st.st_ino}'


class HistoryIndex:
    '''The index of one results store. Read as the runs are listed; what is read anew is
    written at the end, in one short transaction (so that two commands reading one store
    at once never wait on each other for long: one that finds the index busy writes
    nothing, and the next command writes it). Where the index cannot be opened, every
    lookup is a miss and nothing is kept. Use as a context manager.'''

    def __init__(self, base):
        self.base = base
        self.path = os.path.join(base, INDEX_FILE)
        self.db = None
        self.pending = []               # [(key, stamp, date, rows)] to write at the end
        try:
            self.db = self._open()
        except _Stale:
            self._remove()              # damaged, or of another version: rebuilt
            try:
                self.db = self._open()
            except (_Stale, sqlite3.Error, OSError):
                self.db = None
        except (sqlite3.Error, OSError):
            self.db = None              # busy, or where it cannot be: without an index

    def _open(self):
        db = sqlite3.connect(self.path, timeout=BUSY_S, isolation_level=None)
        try:
            version = db.execute('PRAGMA user_version').fetchone()[0]
            if version != VERSION:
                if version != 0:
                    raise _Stale(f'index version {version}, not {VERSION}')
                for statement in _SCHEMA:
                    db.execute(statement)
                db.execute(f'PRAGMA user_version = {VERSION}')
        except sqlite3.Error as err:
            db.close()
            if getattr(err, 'sqlite_errorname', '') in ('SQLITE_NOTADB', 'SQLITE_CORRUPT'):
                raise _Stale(str(err)) from err
            raise
        except _Stale:
            db.close()
            raise
        return db

    def _remove(self):
        for suffix in ('', '-journal'):
            try:
                os.unlink(self.path + suffix)
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.db is None:
            return
        try:
            if self.pending:
                self._write()
        finally:
            self.db.close()
            self.db = None

    def _write(self):
        try:
            self.db.execute('BEGIN IMMEDIATE')
        except sqlite3.Error:
            return                      # busy, or cannot be written: next time
        try:
            for key, stamp, date, rows in self.pending:
                self.db.execute('DELETE FROM entries WHERE path = ?', (key,))
                self.db.execute('INSERT OR REPLACE INTO runs VALUES (?, ?, ?)',
                                (key, stamp, date))
                self.db.executemany('INSERT INTO entries VALUES (?, ?, ?, ?)', rows)
            self.db.execute('COMMIT')
        except sqlite3.Error:
            self.db.execute('ROLLBACK')

    def _key(self, run_path):
        # A run by its place in the store (site/run-id): the store may be named by
        # another path, or moved.
        return os.path.relpath(run_path, self.base)

    def lookup(self, run_path):
        '''(date, {node: [entry as a dict]}) of the run as indexed, or None: not indexed,
        or its report.json has changed since.'''
        if self.db is None:
            return None
        stamp = stamp_of(run_path)
        if not stamp:
            return None
        key = self._key(run_path)
        try:
            row = self.db.execute('SELECT stamp, date FROM runs WHERE path = ?',
                                  (key,)).fetchone()
            if row is None or row[0] != stamp:
                return None
            rows = self.db.execute('SELECT node, entry FROM entries WHERE path = ? '
                                   'ORDER BY seq', (key,)).fetchall()
        except sqlite3.Error:
            return None
        out = {}
        for node, entry in rows:
            out.setdefault(node, []).append(json.loads(entry))
        return row[1], out

    def keep(self, run_path, stamp, date, node_entries):
        '''Index a run read from its documents: `stamp` taken before it was read (so that
        a report.json rewritten meanwhile is read again next time), `node_entries`
        {node: [entry as a dict]}.'''
        if self.db is None or not stamp:
            return
        key = self._key(run_path)
        rows = [(key, seq, node, json.dumps(entry))
                for seq, (node, entry) in enumerate(
                    (n, e) for n, es in node_entries.items() for e in es)]
        self.pending.append((key, stamp, date, rows))
