'''cb-linktest-report (`cobalt-bench linktest-report`, cobalt_bench.cli.linktest_report) on
files that are no cb-linktest results, and under a Python without numpy. (Its PDF:
test_linktest_pdf.py; damaged results files: tests/python/cli/test_cli_faults.py.)'''

import os
import subprocess

import numpy as np
import pytest

from plugins.checkout import ROOT

REPORT = os.path.join(ROOT, 'bin', 'cb-linktest-report')


def test_report_bad_input(tmp_path):
    rep = subprocess.run([REPORT, str(tmp_path / 'missing.npz')], capture_output=True, text=True)
    assert rep.returncode == 3 and 'cannot read' in rep.stderr
    bogus = tmp_path / 'bogus.npz'
    np.savez(bogus, x=np.zeros(3))
    rep = subprocess.run([REPORT, str(bogus)], capture_output=True, text=True)
    assert rep.returncode == 3 and 'not a cb-linktest results file' in rep.stderr
    rep = subprocess.run([REPORT, str(bogus), '--min-bandwidth', '-1'], capture_output=True, text=True)
    assert rep.returncode == 2


def test_report_without_numpy_says_what_is_missing(tmp_path):
    # The system python without the venv (the package from the checkout's python/, as the
    # module's PYTHONPATH gives it): the report re-runs itself with the checkout's venv;
    # with that prevented, it names what is missing and exits 3.
    if subprocess.run(['/usr/bin/python3', '-c', 'import numpy, matplotlib'],
                      capture_output=True).returncode == 0:
        pytest.skip('the system python has numpy and matplotlib')
    report = ['/usr/bin/python3', '-m', 'cobalt_bench', 'linktest-report']
    env = dict(os.environ, CB_LINKTEST_REPORT_REEXEC='1', PYTHONPATH=os.path.join(ROOT, 'python'))
    rep = subprocess.run([*report, 'x.npz'], capture_output=True, text=True, env=env)
    assert rep.returncode == 3
    assert 'numpy' in rep.stderr and 'requirements.txt' in rep.stderr
    env.pop('CB_LINKTEST_REPORT_REEXEC')
    rep = subprocess.run([*report, str(tmp_path / 'x.npz')], capture_output=True, text=True,
                         env=env)
    assert rep.returncode == 3 and 'cannot read' in rep.stderr  # ran, with the venv's numpy
    # the same command as `cobalt-bench linktest-report`
    rep = subprocess.run(['/usr/bin/python3', '-m', 'cobalt_bench', 'linktest-report',
                          str(tmp_path / 'x.npz')], capture_output=True, text=True, env=env)
    assert rep.returncode == 3 and 'cannot read' in rep.stderr
