'''The report's plotters find their kernels' documents through one index of the run
(report.plots.documents_of): each document of a kernel once, in the run's order, its path
beside it; the index is the run's while make_plots goes through the plotters, and is not
kept after.'''

from cobalt_bench.report import plots
from cobalt_bench.store.model import KIND_JOBS, Case, Run


def run():
    cases = [Case(check='mem-test', docs=[{'test': 'mem-test', 'host': 'n1'}],
                  doc_paths=['/r/n1.json']),
             Case(check='Pack', docs=[{'test': 'preflight'}, {'test': 'mem-test', 'host': 'n2'}],
                  doc_paths=['/r/p.json']),         # its second document has no path
             Case(check='odd', docs=[{'test': ['not', 'a', 'name']}, {'host': 'n3'}])]
    return Run(path='/r', kind=KIND_JOBS, cases=cases)


def test_each_document_of_a_kernel_once_in_order_with_its_path():
    r = run()
    found = plots.documents_of(r, 'mem-test')
    assert [(n, c.check, d['host'], p) for n, c, d, p in found] == [
        (0, 'mem-test', 'n1', '/r/n1.json'), (1, 'Pack', 'n2', None)]
    assert [d for _, _, d, _ in plots.documents_of(r, 'preflight')] == [{'test': 'preflight'}]
    assert plots.documents_of(r, 'gpu-copy') == ()


def test_the_index_is_the_runs_while_the_plotters_run_and_not_kept(monkeypatch):
    r, seen = run(), []

    def plotter(run):
        seen.append(plots._INDEXED[0] is run and
                    plots.documents_of(run, 'mem-test') is plots._INDEXED[1]['mem-test'])
        return []
    monkeypatch.setattr(plots, 'plot_names', lambda: ['probe'])
    monkeypatch.setitem(plots.PLOTTERS, 'probe', plotter)
    assert plots.make_plots(r) == []
    assert seen == [True]
    assert plots._INDEXED == [None, None]       # the run is not held after
