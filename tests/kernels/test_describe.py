"""`KERNEL --describe`: each C kernel describes its options and its document's metrics from
its own tables (src/common/cb_describe.c); the Python package takes every metric's unit
from those descriptions (python/cobalt_bench/kernels/described.json, made by make)."""

import json
import os
import re
import subprocess

import pytest

from cobalt_bench import kernels
from cobalt_bench.errors import CannotRun
from cobalt_bench.kernels import described
from plugins.checkout import ROOT

BIN = os.path.join(ROOT, 'bin')
OPTION_TYPES = {'flag', 'int', 'long', 'u64', 'double', 'size', 'duration', 'string',
                'intlist', 'choice', 'custom'}
BINARIES = sorted({b for k in kernels.KERNELS.values() for b in k.binaries
                   if b != 'cobalt-bench'})


def describe(binary):
    path = os.path.join(BIN, binary)
    if not os.access(path, os.X_OK):
        pytest.skip(f'bin/{binary} is not built here (make says what it lacks)')
    proc = subprocess.run([path, '--describe'], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize('binary', BINARIES)
def test_a_kernel_describes_its_options_as_its_help_shows_them(binary):
    d = describe(binary)
    assert d['kernel'] == binary
    version = subprocess.run([os.path.join(BIN, binary), '--version'], capture_output=True,
                             text=True, timeout=30).stdout
    assert f"Test version {d['test_version']}" in version
    help_text = subprocess.run([os.path.join(BIN, binary), '--help'], capture_output=True,
                               text=True, timeout=30).stdout
    names = [o['name'] for o in d['options']]
    assert len(names) == len(set(names)), names
    for o in d['options']:
        assert o['type'] in OPTION_TYPES, o
        assert re.search(rf'--{re.escape(o["name"])}\b', help_text), o['name']
        if o['letter']:
            assert f'-{o["letter"]}, --{o["name"]}' in help_text, o['name']
        if o['min'] is not None:
            assert o['min'] <= o['max'], o
        for spelling in o['deprecated_spellings']:
            assert f'{spelling} (now --{o["name"]})' in help_text, spelling
    metrics = [m['name'] for m in d['metrics']]
    assert len(metrics) == len(set(metrics)), metrics
    for m in d['metrics']:
        assert m['unit'] and m['meaning'], m
        assert m['better'] in ('higher', 'lower', 'neither'), m


@pytest.mark.parametrize('binary', BINARIES)
def test_the_packages_description_is_the_kernels_own(binary):
    # python/cobalt_bench/kernels/described.json (src/describe/, made by make from the
    # kernels' tables, without building them) says what each built kernel says.
    package = described.descriptions()
    if binary not in package:
        pytest.skip(f'{binary} is not a program src/describe/ describes')
    assert package[binary] == describe(binary)


@pytest.mark.parametrize('name', sorted(kernels.KERNELS))
def test_every_metric_a_descriptor_declares_has_its_kernels_unit(name):
    kernel = kernels.KERNELS[name]
    units = kernel.metrics
    assert units and all(units.values()), units
    if kernel.units is None:        # a C kernel: each unit is its table's
        assert units == {m: described.metric_units(name)[m] for m in kernel.declared}


def test_a_metric_no_kernel_describes_is_an_error_naming_it():
    with pytest.raises(CannotRun, match='describes no metric measured_sped'):
        described.units_of('mem-test', ('measured_speed', 'measured_sped'))


def test_without_the_descriptions_the_error_says_to_run_make(tmp_path, monkeypatch):
    monkeypatch.setattr(described, 'PATH', str(tmp_path / 'described.json'))
    described.descriptions.cache_clear()
    try:
        with pytest.raises(CannotRun, match='run make'):
            described.descriptions()
    finally:
        described.descriptions.cache_clear()


def test_a_document_holds_only_described_metrics_in_their_units(tmp_path):
    described = {m['name']: m['unit'] for m in describe('mem-test')['metrics']}
    doc_path = tmp_path / 'mem-test.json'
    proc = subprocess.run([os.path.join(BIN, 'mem-test'), '--stations', '1',
                           '--desired-rate', '1', '--duration', '1', '--quiet',
                           '--json', str(doc_path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads(doc_path.read_text())['metrics']
    assert metrics and {k: v['unit'] for k, v in metrics.items()} == \
        {k: described[k] for k in metrics}


def test_describe_answers_as_help_does():
    # Like --help: it answers at once, before the options after it are checked, and
    # writes nothing but the description.
    d = describe('mem-test')
    proc = subprocess.run([os.path.join(BIN, 'mem-test'), '--describe', '--stations', '0'],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and json.loads(proc.stdout) == d and not proc.stderr
