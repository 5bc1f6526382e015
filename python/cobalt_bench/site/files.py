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


def read_yaml(path, cannot_read):
    '''The YAML document of a site file (None when empty); SiteError naming the file
    when it cannot be read (`cannot_read`: how the message says so) or is not YAML.'''
    try:
        import yaml
    except ImportError:                 # pragma: no cover
        raise CannotRun(f'PyYAML is needed to read {os.path.basename(path)} (pip install PyYAML)')
    try:
        with open(path, encoding='utf-8') as fp:
            return yaml.safe_load(fp)
    except OSError as err:
        raise SiteError(f'{path}: {cannot_read}: {err.strerror}')
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as err:
        raise SiteError(f'{path}: not valid YAML: {str(err).splitlines()[0]}')
