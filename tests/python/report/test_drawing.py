'''A report's figures drawn by a child process while the report's text is made
(report/drawing.py): the images the same as those drawn here, a figure that cannot be
drawn named in its caption, and a child that dies, or is never wanted, costing nothing but
the time: the figures are then drawn here, and no process is left behind.'''

import os
import signal

import pytest
from matplotlib.artist import Artist

from cobalt_bench.report import drawing
from cobalt_bench.report.plots import Plot
from cobalt_bench.store import bulk

def _figure(plt, n):
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot(range(n), [i * i for i in range(n)], marker='o', label=f'n{n}')
    ax.hist([0.1 * i for i in range(10 * n)], bins=12)
    ax.set_title(f'figure {n} $\\undefinedcmd$')       # plain text, no mathtext
    ax.legend()
    return fig


def figure(n):
    return drawing.Sketch(_figure, n)


class Refused(Artist):
    '''An artist matplotlib cannot draw: a limit of its own, met when the figure is drawn
    (as an older Agg refused an image of more than 2^16 pixels a side).'''

    def draw(self, renderer):
        raise ValueError('Image size of 13000200x380 pixels is too large')


def _too_large(plt):
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1])
    fig.add_artist(Refused())
    return fig


def _fails_half_made(plt):
    plt.subplots()
    raise ValueError('no such data')


def too_large():
    return drawing.Sketch(_too_large)


def here(n):
    '''The image of figure(n) drawn in this process.'''
    return drawing.drawn(figure(n))[0]


def plots(*sketches):
    return [Plot(f'p{i}', f'plot {i}', f'caption {i}', sketch=s) for i, s in enumerate(sketches)]


@pytest.fixture
def drawer():
    d = drawing.Drawer()
    if not d.start():
        pytest.skip('no drawing process here: one usable CPU, or no fork')
    yield d
    d.stop()


def gone(pid):
    '''Whether `pid` is no child of this process any more (reaped).'''
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_the_child_draws_what_this_process_draws(drawer):
    made = plots(figure(3), figure(7))
    drawing.draw_aside(made, drawer)
    assert all(p.drawing is not None for p in made)
    assert [p.png for p in made] == [here(3), here(7)]
    assert made[0].png[:4] == b'\x89PNG' and made[0].png != made[1].png
    assert all(p.sketch is None for p in made)     # drawn once


def test_a_figure_that_cannot_be_drawn_says_why_in_its_caption(drawer):
    made = plots(figure(2), too_large())
    made[1].not_drawn = ('big: not drawn', 'This plot could not be drawn from the results: ')
    drawing.draw_aside(made, drawer)
    assert made[0].png[:4] == b'\x89PNG'
    assert made[1].png == b''
    assert made[1].title == 'big: not drawn'
    assert made[1].caption.startswith('This plot could not be drawn from the results: ')
    assert made[1].caption.endswith('ValueError: Image size of 13000200x380 pixels is too large')


def test_what_a_sketch_that_fails_made_is_closed():
    plt = drawing.pyplot()
    before = plt.get_fignums()
    png, why = drawing.drawn(drawing.Sketch(_fails_half_made))
    assert png == b'' and why == 'ValueError: no such data'
    assert plt.get_fignums() == before
    drawing.drawn(figure(3))
    assert plt.get_fignums() == before      # a figure drawn is closed


def test_a_child_killed_leaves_the_figures_drawn_here(drawer):
    pid = drawer._pid
    os.kill(pid, signal.SIGKILL)
    made = plots(figure(4))
    drawing.draw_aside(made, drawer)
    assert made[0].png == here(4)
    assert not drawer.running and gone(pid)


def test_a_child_killed_while_drawing_leaves_the_figures_drawn_here(drawer):
    made = plots(figure(5), figure(6))
    drawing.draw_aside(made, drawer)
    pid = drawer._pid
    os.kill(pid, signal.SIGKILL)
    assert [p.png for p in made] == [here(5), here(6)]
    assert gone(pid)


def test_an_answer_nobody_reads_is_not_waited_for(drawer):
    made = plots(figure(8))
    drawing.draw_aside(made, drawer)
    pid = drawer._pid
    drawer.stop()           # an error on the way to the report's writing, Ctrl-C
    assert gone(pid)
    assert made[0].png == here(8)     # still drawn, here, where it is asked for


def test_the_child_ends_with_its_requests(drawer):
    pid = drawer._pid
    drawer.stop()
    assert gone(pid) and not drawer.running
    drawer.stop()           # twice: nothing to do


def test_one_request_after_another(drawer):
    first, second = plots(figure(2)), plots(figure(3))
    drawing.draw_aside(first, drawer)
    drawing.draw_aside(second, drawer)    # the first answer is read before it is sent
    assert second[0].png == here(3) and first[0].png == here(2)


def test_one_usable_cpu_starts_no_child(monkeypatch):
    monkeypatch.setattr(drawing, 'usable_cpus', lambda: 1)
    with drawing.Drawer() as d:
        assert not d.running
        made = plots(figure(3))
        drawing.draw_aside(made, d)
        assert made[0].png == here(3)


def test_another_thread_starts_no_child(monkeypatch):
    # A fork copies only the thread that forks: a lock another thread holds stays held.
    monkeypatch.setattr(drawing.threading, 'active_count', lambda: 2)
    with drawing.Drawer() as d:
        assert not d.running


def test_without_a_drawer_a_plot_is_drawn_when_asked_for():
    (plot,) = plots(figure(3))
    drawing.draw_aside([plot], None)
    assert plot.sketch is not None          # not drawn yet
    plot.add_to_caption(' (more not plotted)')
    assert plot.sketch is not None          # a caption added draws nothing
    assert plot.caption == 'caption 0 (more not plotted)' and plot.png == here(3)


def test_the_workers_of_a_large_run_read_beside_it(tmp_path):
    # The drawer is forked before the run's files are read by their workers (store.bulk):
    # both at once, and the workers' results are whole.
    items = list(range(bulk.MIN_PARALLEL + 10))
    with drawing.Drawer() as d:
        assert list(bulk.map_items(abs, [-i for i in items])) == items
        made = plots(figure(2))
        drawing.draw_aside(made, d)
        assert made[0].png == here(2)
