'''Drawing a report's figures into PNG images while its text is made.

matplotlib takes 2-3 s over a 10,000-node report's few figures (importing it, making
their artists, drawing them), on one CPU while the others wait, and the text of the
report (the Markdown tables, the page around the images) needs no image. So a plotter
(report.plots) gives each figure as a Sketch: the function that makes it, of the plain
data it draws (a few bars, a curve, an array of values); the sketches go to a Drawer, a
child process that imports matplotlib while the run is read, makes and draws them, and
hands back each PNG image, or why it could not be drawn; the report's text is made
meanwhile, and a plot's image is waited for where it is first asked for (plots.Plot.png).

The Drawer is forked before the run is read, while this process is small: after a fork,
each page of memory either process writes is copied, and a process holding a 10,000-node
run would pay a second of that for its pages. Sketches and images go through pipes,
pickled (the functions by name: this program's own, nothing read from a file).

Where no Drawer can be had (one usable CPU, no fork, another thread in this process that
a fork could leave holding a lock, the child killed), each figure is made and drawn here
when its image is asked for: the images are the same.
'''

import io
import os
import pickle
import signal
import struct
import threading

from ..linktest.figures import pyplot
from ..store.bulk import usable_cpus

#: Text is drawn as it is: no TeX, no mathtext (a node named `$\undefinedcmd$` is a name,
#: not a formula matplotlib fails to parse).
PLAIN_TEXT = {'text.usetex': False, 'text.parse_math': False}

#: An error message as a caption gives it, at most this many characters.
MAX_ERROR = 300

_LENGTH = struct.Struct('<Q')      # a message's length, before it


class Sketch:
    '''A figure still to make: make(pyplot, *args), a module-level function (sent to the
    Drawer by name) of plain, picklable data.'''
    __slots__ = ('make', 'args')

    def __init__(self, make, *args):
        self.make, self.args = make, args

    def __reduce__(self):
        return Sketch, (self.make, *self.args)

    def figure(self):
        '''The matplotlib figure, made with text drawn as it is (PLAIN_TEXT).'''
        plt = pyplot()
        with plt.rc_context(PLAIN_TEXT):
            return self.make(plt, *self.args)


def png_of(fig):
    '''The PNG image of a matplotlib figure, which is closed once drawn; matplotlib's
    exception where it cannot be drawn.'''
    plt = pyplot()
    try:
        buf = io.BytesIO()
        with plt.rc_context(PLAIN_TEXT):
            fig.savefig(buf, format='png', dpi=100, bbox_inches='tight',
                        metadata={'Software': None})
        return buf.getvalue()
    finally:
        plt.close(fig)


def drawn(sketch):
    '''(PNG bytes, '') of a Sketch's figure, or (b'', why it could not be made or drawn).'''
    plt = pyplot()
    before = set(plt.get_fignums())
    try:
        return png_of(sketch.figure()), ''
    except Exception as err:    # matplotlib's own limits (a figure too large): a caption
        for num in set(plt.get_fignums()) - before:     # what was made of it
            plt.close(num)
        return b'', f'{type(err).__name__}: {str(err)[:MAX_ERROR]}'


class Plot:
    '''A plot of the report: its file stem (plots/<name>.png), title, caption, PNG image and
    the files the report links beside it ((label, absolute path), e.g. the PDF report of a
    cb-linktest run). Made of a drawing.Sketch (its figure's data), its image is drawn when
    first asked for (png, title or caption): by the process drawing the report's figures
    where it was handed to one (drawing.Drawer: `drawing`), else here. A figure that cannot
    be drawn leaves no image (b''): `not_drawn` gives its title and the start of its
    caption, which says why.'''

    def __init__(self, name, title, caption, png=b'', links=(), sketch=None, not_drawn=None):
        self.name = name
        self.links = links
        self.sketch = sketch        # the figure still to draw, or None
        self.drawing = None         # the drawing.Drawing drawing it, or None: drawn here
        self.not_drawn = not_drawn or (f'{title}: not drawn', 'This plot could not be drawn: ')
        self._title, self._caption, self._png = title, caption, png

    def _drawn(self):
        if self.sketch is None:
            return
        sketch, self.sketch = self.sketch, None
        self._png, why = self.drawing.image(sketch) if self.drawing else drawn(sketch)
        if not self._png:
            self._title, prefix = self.not_drawn
            self._caption = prefix + why

    @property
    def png(self):
        '''The PNG image; b'': not drawn (the caption says why).'''
        self._drawn()
        return self._png

    @property
    def title(self):
        self._drawn()
        return self._title

    @property
    def caption(self):
        self._drawn()
        return self._caption

    def add_to_caption(self, text):
        '''`text` added to the caption, the figure not drawn for it.'''
        self._caption += text

    def __repr__(self):
        return f'Plot({self.name!r}, {self._title!r})'


class Drawing:
    '''The images of some sketches: the Drawer's answer, read when first asked for, else
    each drawn here. image(sketch): (PNG bytes, why not).'''

    def __init__(self, sketches, answer=None):
        self.sketches = list(sketches)
        self._answer = answer       # a callable giving the Drawer's images, or None
        self._images = None

    def image(self, sketch):
        if self._images is None:
            images = self._answer() if self._answer else None
            self._images = images if images is not None else [None] * len(self.sketches)
        i = next(i for i, f in enumerate(self.sketches) if f is sketch)
        if self._images[i] is None:
            self._images[i] = drawn(sketch)
        return self._images[i]


class Drawer:
    '''A child process that draws sketches into PNG images (draw), forked by start() or
    `with Drawer():` before a large run is read; stopped by stop() or the end of the
    block. Without a child, draw() gives a Drawing that draws here.'''

    def __init__(self):
        self._pid = None
        self._to = self._from = None        # the pipes' ends this process holds
        self._pending = None                # the Drawing whose answer is still unread

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    @property
    def running(self):
        return self._pid is not None

    def start(self):
        '''Fork the child; False (none started) where none can be had.'''
        if self._pid is not None:
            return True
        if usable_cpus() < 2 or not hasattr(os, 'fork') or threading.active_count() > 1:
            return False
        try:
            requests, answers = os.pipe(), os.pipe()
        except OSError:
            return False
        try:
            pid = os.fork()
        except OSError:
            for fd in requests + answers:
                os.close(fd)
            return False
        if pid == 0:
            os.close(requests[1])
            os.close(answers[0])
            _serve(requests[0], answers[1])     # never returns
        os.close(requests[0])
        os.close(answers[1])
        self._pid, self._to, self._from = pid, requests[1], answers[0]
        return True

    def draw(self, sketches):
        '''A Drawing of `sketches`, sent to the child to draw (none running: they are
        drawn here when asked for).'''
        sketches = list(sketches)
        if self._pending is not None:
            self._pending.image(self._pending.sketches[0])  # one request at a time
        if not sketches or self._pid is None:
            return Drawing(sketches)
        try:
            _send(self._to, pickle.dumps(sketches, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:         # the child is gone
            self.stop()
            return Drawing(sketches)
        self._pending = Drawing(sketches, lambda: self._images(len(sketches)))
        return self._pending

    def _images(self, count):
        '''The child's answer to the request in flight: [(png, why)], or None where it
        gave none (killed, or cut short).'''
        self._pending = None
        if self._from is None:      # stopped meanwhile
            return None
        try:
            images = pickle.loads(_receive(self._from))
        except Exception:       # EOF, a short read, an answer cut short: the child died
            self.stop()
            return None
        ok = isinstance(images, list) and len(images) == count and all(
            isinstance(i, tuple) and len(i) == 2 and isinstance(i[0], bytes) for i in images)
        return images if ok else None

    def stop(self):
        '''End the child: it ends on the end of its requests, or is killed where an answer
        is still unread (nobody will read it); reaped either way.'''
        if self._pid is None:
            return
        pid, self._pid = self._pid, None
        if self._pending is not None:
            self._pending = None
            _kill(pid)
        for fd in (self._to, self._from):
            try:
                os.close(fd)
            except OSError:
                pass
        self._to = self._from = None
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _send(fd, data):
    with memoryview(_LENGTH.pack(len(data)) + data) as view:
        while view:
            view = view[os.write(fd, view):]


def _receive(fd):
    '''One message; EOFError where the pipe ends before it does.'''
    def exactly(n):
        parts = []
        while n:
            part = os.read(fd, min(n, 1 << 20))
            if not part:
                raise EOFError('the drawing process ended')
            parts.append(part)
            n -= len(part)
        return b''.join(parts)
    return exactly(_LENGTH.unpack(exactly(_LENGTH.size))[0])


def _serve(requests, answers):
    '''The child: draw each list of sketches it is sent, answer [(png, why)], end at the end
    of its requests; exit without running anything of the parent's (os._exit: no atexit
    handlers, no output buffers written twice).'''
    status = 1
    try:
        # Ctrl-C reaches the process group: the report says it was interrupted, once.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        # No output of its own, and no reader of the report's output waits for it.
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        pyplot()        # imported while the parent reads the run
        while True:
            try:
                sketches = pickle.loads(_receive(requests))
            except EOFError:
                break
            _send(answers, pickle.dumps([drawn(sketch) for sketch in sketches],
                                        protocol=pickle.HIGHEST_PROTOCOL))
        status = 0
    finally:
        os._exit(status)


def draw_aside(plots, drawer):
    '''The sketches of `plots` (plots.Plot) handed to `drawer` (a Drawer, or None: each
    drawn here when its image is asked for).'''
    pending = [p for p in plots if p.sketch is not None]
    if drawer is None or not pending:
        return
    drawing = drawer.draw(p.sketch for p in pending)
    for p in pending:
        p.drawing = drawing
