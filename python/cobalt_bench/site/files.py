'''What every file of a site's definition shares: its error (naming the file and the
entry) and its YAML reading.'''

import os

from ..errors import CannotRun


class SiteError(CannotRun):
    '''A site definition that cannot judge what it claims to: exit status 3, the file and
    the entry named.'''


def entry_name(path, check=None, partition=None, metric=None):
    parts = [path]
    if check is not None:
        parts.append(f'check {check}')
    if partition is not None:
        parts.append(f'partition {partition!r}')
    if metric is not None:
        parts.append(f'metric {metric!r}')
    return ', '.join(parts)


#: Values a site file may expand to, its aliases followed (an alias bomb of nested anchors
#: is a few lines that expand to 10^9 values: judging would run for minutes or die). The
#: largest site file here holds a few hundred.
MAX_VALUES = 100_000


def _strict_loader(yaml):
    '''PyYAML's safe loader, refusing a key given twice in one mapping (a second `MemTest:`
    block, a repeated metric line: YAML's last-one-wins would hide the first). Keys merged
    from an anchor (`<<: *base`) may be overridden, as YAML means them to be.'''
    class Strict(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen = {}
                for key_node, _ in node.value:
                    if key_node.tag == 'tag:yaml.org,2002:merge':
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        first = seen.setdefault(key, key_node.start_mark.line + 1)
                    except TypeError:       # an unhashable key: the constructor says so
                        continue
                    if first != key_node.start_mark.line + 1:
                        raise yaml.constructor.ConstructorError(
                            None, None, f'the key {key!r} is given twice (first on line '
                            f'{first})', key_node.start_mark)
            return super().construct_mapping(node, deep=deep)
    return Strict


def _values(doc, limit):
    '''The number of values `doc` holds, its shared (aliased) parts counted each time they
    appear, up to `limit` + 1.'''
    count, stack = 0, [doc]
    while stack and count <= limit:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def read_yaml(path, cannot_read):
    '''The YAML document of a site file (None when empty); SiteError naming the file
    when it cannot be read (`cannot_read`: how the message says so), is not YAML, gives a
    key twice in one mapping, or expands to more than MAX_VALUES values.'''
    try:
        import yaml
    except ImportError:                 # pragma: no cover
        raise CannotRun(f'PyYAML is needed to read {os.path.basename(path)} (pip install PyYAML)')
    try:
        with open(path, encoding='utf-8') as fp:
            doc = yaml.load(fp, Loader=_strict_loader(yaml))
    except OSError as err:
        raise SiteError(f'{path}: {cannot_read}: {err.strerror}')
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as err:
        raise SiteError(f'{path}: not valid YAML: {" ".join(str(err).split())}')
    if _values(doc, MAX_VALUES) > MAX_VALUES:
        raise SiteError(f'{path}: expands to more than {MAX_VALUES:,} values (its aliases '
                        'followed): not a site file')
    return doc
