'''The page layout of the PDF report of a cb-linktest run (pdf.py): A4 pages filled top-down
with headings, label/value lines, two-column settings, tables, charts and figure pages,
a new page when one is full. matplotlib draws the text (as the plots), so the report needs
nothing beyond what the PNG files need.'''

import textwrap

A4 = (8.27, 11.69)          # inches, portrait
MARGIN = 0.7                # inches on every side
LINE = 0.19                 # inches per line of 9-point text


class _Pages:
    '''Text pages laid out top-down: headings, label/value lines and tables, a new page
    (its heading repeated, "continued") when one is full.'''

    def __init__(self, pdf, plt, footer):
        self.pdf, self.plt, self.footer = pdf, plt, footer
        self.fig, self.y, self.heading = None, 0.0, ''
        self.count = 0

    def _new_page(self):
        self.close()
        self.fig = self.plt.figure(figsize=A4)
        self.y = MARGIN

    def close(self):
        if self.fig is not None:
            self.count += 1
            self.fig.text(MARGIN / A4[0], 0.35 / A4[1], self.footer, fontsize=7, color='#666666')
            self.pdf.savefig(self.fig)
            self.plt.close(self.fig)
            self.fig = None

    def _room(self, inches):
        if self.fig is None or self.y + inches > A4[1] - MARGIN:
            self._new_page()
            if self.heading:
                self._text(self.heading + ' (continued)', 11, weight='bold')
                self.y += 0.1

    def _text(self, text, size, x=MARGIN, **kw):
        self.fig.text(x / A4[0], 1 - self.y / A4[1], text, fontsize=size, va='top', **kw)
        self.y += size / 72 * 1.45

    def title(self, text, sub=''):
        self._new_page()
        self._text(text, 17, weight='bold')
        if sub:
            self._text(sub, 9, color='#444444')
        self.y += 0.15

    def section(self, text, need=0.8):
        self.heading = ''
        self._room(need)
        self.y += 0.12
        self._text(text, 12, weight='bold', color='#1f3b63')
        self.fig.add_artist(self.plt.Line2D(
            [MARGIN / A4[0], 1 - MARGIN / A4[0]], [1 - (self.y - 0.03) / A4[1]] * 2,
            color='#1f3b63', linewidth=0.6))
        self.y += 0.08
        self.heading = text

    def kv(self, label, value, color=None, wrap=58):
        lines = textwrap.wrap(str(value), wrap, break_long_words=True,
                              break_on_hyphens=False) or ['']
        self._room(LINE * len(lines))
        self.fig.text(MARGIN / A4[0], 1 - self.y / A4[1], label, fontsize=8.5, va='top',
                      color='#333333')
        for line in lines:
            self.fig.text((MARGIN + 3.0) / A4[0], 1 - self.y / A4[1], line, fontsize=9,
                          va='top', color=color or 'black')
            self.y += LINE

    def grid(self, items):
        '''(label, value) pairs in two columns, down the first, then the second.'''
        half = -(-len(items) // 2)
        col = (A4[0] - 2 * MARGIN) / 2
        self._room(LINE * min(half, 4))
        for i in range(half):
            self._room(LINE)
            for k, (label, value) in enumerate(items[i::half][:2] if half else []):
                x = MARGIN + k * col
                self.fig.text(x / A4[0], 1 - self.y / A4[1], label, fontsize=8, va='top',
                              color='#333333')
                text = str(value)
                if len(text) > 22:
                    text = text[:21] + '\u2026'
                self.fig.text((x + col - 0.15) / A4[0], 1 - self.y / A4[1], text,
                              fontsize=8, va='top', ha='right')
            self.y += LINE * 0.92

    def para(self, text, size=9, color='#333333', wrap=100):
        for line in textwrap.wrap(text, wrap):
            self._room(LINE)
            self._text(line, size, color=color)

    def mono(self, text, wrap=96):
        for line in textwrap.wrap(text, wrap, break_long_words=True,
                                  break_on_hyphens=False) or ['']:
            self._room(LINE)
            self._text(line, 8, family='monospace')

    def table(self, header, rows, widths, aligns=None, shade=None):
        '''Rows of cells at the given column widths (inches); a right-aligned column
        where aligns says 'r'; shade(row) a background colour or None.'''
        aligns = aligns or 'l' * len(header)

        def row_at(cells, bold=False, bg=None):
            if bg:
                self.fig.add_artist(self.plt.Rectangle(
                    (MARGIN / A4[0], 1 - (self.y + LINE - 0.03) / A4[1]),
                    sum(widths) / A4[0], LINE / A4[1], color=bg, zorder=0))
            x = MARGIN
            for cell, w, al in zip(cells, widths, aligns):
                cell = str(cell)
                fits = int(w * 15.5) - 1     # characters of 8-point text in w inches
                if len(cell) > fits:
                    cell = cell[:max(1, fits - 1)] + '\u2026'
                self.fig.text((x + (w - 0.08 if al == 'r' else 0)) / A4[0],
                              1 - self.y / A4[1], cell, fontsize=8, va='top',
                              ha='right' if al == 'r' else 'left',
                              weight='bold' if bold else 'normal')
                x += w
            self.y += LINE

        self._room(LINE * 2)
        row_at(header, bold=True, bg='#e4e9f0')
        for i, r in enumerate(rows):
            if self.fig is None or self.y + LINE > A4[1] - MARGIN:
                self._room(LINE * 2)
                row_at(header, bold=True, bg='#e4e9f0')
            row_at(r, bg=(shade(r) if shade else None) or ('#f5f5f5' if i % 2 else None))

    def chart(self, height, draw):
        '''A plot of `height` inches across the text width at the current place:
        draw(fig, rect) with rect the axes' [left, bottom, width, height] in the page.'''
        self._room(height)
        left, right = MARGIN + 0.9, MARGIN + 0.1
        # 0.35 inches above the axes for a legend, 0.55 below for tick labels and label
        draw(self.fig, [left / A4[0], 1 - (self.y + height - 0.55) / A4[1],
                        (A4[0] - left - right) / A4[0], (height - 0.9) / A4[1]])
        self.y += height

    def figure_page(self, draw):
        '''A page of its own for a plot: draw(fig) fills an A4 figure.'''
        self.close()
        self.heading = ''
        fig = self.plt.figure(figsize=A4)
        draw(fig)
        fig.text(MARGIN / A4[0], 0.35 / A4[1], self.footer, fontsize=7, color='#666666')
        self.pdf.savefig(fig)
        self.plt.close(fig)
        self.count += 1
