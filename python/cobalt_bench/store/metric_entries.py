'''A kernel document's "metrics" object held compactly once it has been read and checked
(store.reader): a sweep of 10,000 nodes keeps 100,000 documents in memory, and their
metrics, a dict of {"value", "unit"} dicts each, were two-thirds of it (3.4 KiB of a
mem-test document's 6.1 KiB: bench/fleet-scale).

MetricEntries is a read-only Mapping of the same entries: `doc['metrics'][name]` and
`.get(name)` give {"value": ..., "unit": ...} as the file has it, a new dict each time.
Its names and units are shared by every document that lists the same ones in the same
order (a sweep's documents of one kernel do), so a document keeps only its values.
Only an object whose every entry is exactly {"value": finite number, "unit": text}, in
that order, is held so; any other is left the dict it was parsed as.
'''

from collections.abc import Mapping

#: Layouts kept for sharing at most: a store whose documents each name other metrics
#: keeps no more than this many, and holds the rest unshared, still exact.
MAX_LAYOUTS = 4096


class _Layout:
    '''The names and units of a metrics object, in order, with each name's place.'''
    __slots__ = ('names', 'units', 'index')

    def __init__(self, names, units):
        self.names, self.units = names, units
        self.index = {name: i for i, name in enumerate(names)}


_LAYOUTS = {}


def _layout(names, units):
    key = (names, units)
    found = _LAYOUTS.get(key)
    if found is None:
        found = _Layout(names, units)
        if len(_LAYOUTS) < MAX_LAYOUTS:
            _LAYOUTS[key] = found
    return found


class MetricEntries(Mapping):
    '''{name: {"value": value, "unit": unit}} of one document, its values its own.'''
    __slots__ = ('_layout', '_values')

    def __init__(self, layout, values):
        self._layout, self._values = layout, values

    def __getitem__(self, name):
        i = self._layout.index[name]        # KeyError, as a dict's
        return {'value': self._values[i], 'unit': self._layout.units[i]}

    def get(self, name, default=None):
        i = self._layout.index.get(name)
        if i is None:
            return default
        return {'value': self._values[i], 'unit': self._layout.units[i]}

    def __contains__(self, name):
        return name in self._layout.index

    def __iter__(self):
        return iter(self._layout.names)

    def __len__(self):
        return len(self._values)

    @property
    def layout(self):
        '''Its names and units (shared, compared by identity): what is worked out from
        them alone may be kept for every document of the layout (judging.sanity).'''
        return self._layout

    def triples(self):
        '''(name, value, unit) of each entry, in order, without a dict made for each.'''
        return zip(self._layout.names, self._values, self._layout.units)

    def __repr__(self):
        return repr(dict(self.items()))

    def __reduce__(self):
        # A worker's document reaches the command (store.bulk) sharing its layouts there.
        return _entries, (self._layout.names, self._layout.units, self._values)


def _entries(names, units, values):
    return MetricEntries(_layout(names, units), values)


def compact(doc):
    '''`doc` (a parsed JSON value meant as a kernel document) with its metrics held as
    MetricEntries where each entry is exactly {"value": finite number, "unit": text},
    which the contract's check (documents.kernel_doc_problems) passes; unchanged
    otherwise (anything but an object included).'''
    metrics = doc.get('metrics') if doc.__class__ is dict else None
    if metrics.__class__ is not dict or not metrics:
        return doc
    names, values, units = [], [], []
    for name, m in metrics.items():
        if m.__class__ is not dict or len(m) != 2:
            return doc
        value, unit = m.get('value'), m.get('unit')
        # Exactly these types (a bool is an int, but not a number of a result), a finite
        # value (the strict reader reads 1e999 as infinity) and this order of keys: what
        # is given back is what the file said, and every value is a measurement.
        kind = value.__class__
        if not (kind is int or (kind is float and value - value == 0.0)) or \
                unit.__class__ is not str or next(iter(m)) != 'value':
            return doc
        names.append(name)
        values.append(value)
        units.append(unit)
    doc['metrics'] = MetricEntries(_layout(tuple(names), tuple(units)), tuple(values))
    return doc
