'''Loading a site: site-configs/<site>/ (config.py, references.yaml, compliance.yaml) by
name or path, its systems and partitions read by running its ReFrame configuration as
ReFrame does, and its references and compliance definition validated against them.'''

import os
import re
import runpy
from dataclasses import dataclass

from .. import paths
from ..errors import CannotRun
from .compliance import COMPLIANCE, Compliance, load_compliance
from .files import SiteError
from .references import REFERENCES, References, load_references


@dataclass
class SiteDef:
    name: str
    dir: str
    systems: list
    partitions: list            # full names, 'system:partition'
    references: References
    compliance: Compliance

    @property
    def references_path(self):
        return self.references.path


def sites_dir():
    data = paths.data_dir()
    return os.path.join(data, 'site-configs') if data else None


# A site's name as the results store has it (results/<site>/...): a plain name, never a
# path.
_SITE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.+-]*')


def installed_site(name):
    '''The directory of the installed site `name` (this tree's site-configs/<name>) when
    there is one, else None. `name` comes from the results (a run's site, the site
    directory a job's judgement names): only a plain name of a site this tree holds is
    taken; nothing the results name elsewhere is ever loaded (its config.py would run).'''
    base = sites_dir()
    if not base or not isinstance(name, str) or not _SITE_NAME.fullmatch(name):
        return None
    path = os.path.join(base, name)
    return path if os.path.isfile(os.path.join(path, 'config.py')) else None


def installed_site_of(directory):
    '''The installed site a site directory read from the results is (this tree's
    site-configs/<name>, the same directory once links are resolved), else None.'''
    if not isinstance(directory, str) or not directory:
        return None
    path = installed_site(os.path.basename(os.path.normpath(directory)))
    if path and os.path.realpath(path) == os.path.realpath(directory):
        return path
    return None


def _is_site(path):
    '''A site directory: a ReFrame configuration of cobalt-bench's (config.py), or just the
    references a site judges by (references.yaml: a site whose ReFrame configuration is its
    own business, as COBALT_BENCH_SITE takes it).'''
    return any(os.path.isfile(os.path.join(path, f)) for f in ('config.py', REFERENCES))


def site_dir(spec):
    '''A site's directory from its name (site-configs/<name> of this tree) or a path.'''
    if not spec:
        raise CannotRun('no site named')
    if os.sep in spec or os.path.isdir(spec) and _is_site(spec):
        path = os.path.abspath(spec)
        if os.path.isfile(path) and os.path.basename(path) in ('config.py', REFERENCES):
            path = os.path.dirname(path)
    else:
        base = sites_dir()
        path = os.path.join(base, spec) if base else spec
    if not _is_site(path):
        known = sorted(d for d in os.listdir(sites_dir() or '.')
                       if os.path.isfile(os.path.join(sites_dir() or '.', d, 'config.py'))
                       ) if sites_dir() and os.path.isdir(sites_dir()) else []
        raise CannotRun(f'no site {spec!r}: {path} holds neither config.py nor {REFERENCES}'
                        + (f' (sites: {", ".join(known)})' if known else ''))
    return path


def site_systems(config_path):
    '''(site name or None, systems, partition full names) of a site's ReFrame
    configuration, read by running it as ReFrame does (the environment is restored
    afterwards).'''
    saved = dict(os.environ)
    try:
        ns = runpy.run_path(config_path, run_name='cobalt_bench_site_config')
    except SiteError:
        raise
    except Exception as err:            # a site config is Python: anything can go wrong
        if type(err).__name__ == 'ConfigError':
            # Its SITE.checked() said what is wrong, and where (references.yaml, ...).
            raise SiteError(str(err)) from None
        raise CannotRun(f'{config_path}: cannot load the site configuration: '
                        f'{type(err).__name__}: {err}')
    finally:
        os.environ.clear()
        os.environ.update(saved)
    conf = ns.get('site_configuration')
    systems, partitions = systems_of(conf, config_path)
    site = ns.get('SITE')
    name = getattr(site, 'name', None)
    return (name if isinstance(name, str) else None), systems, partitions


def systems_of(conf, where):
    '''(system names, partition full names) of a ReFrame site configuration (a site may
    declare several systems: sjtu).'''
    try:
        systems = [s['name'] for s in conf['systems']]
        partitions = [f'{s["name"]}:{p["name"]}' for s in conf['systems']
                      for p in s.get('partitions', [])]
    except (TypeError, KeyError, IndexError):
        raise CannotRun(f'{where}: no site_configuration with systems and partitions')
    if not systems:
        raise CannotRun(f'{where}: site_configuration declares no system')
    return systems, partitions


def each_partition(configuration, change):
    '''A copy of a site configuration (a dict) with `change(system name, partition)` done to
    a copy of each of its partitions; the original is left as it was.'''
    configuration = dict(configuration)
    if 'systems' not in configuration:
        return configuration
    systems = []
    for system in configuration['systems']:
        system = dict(system)
        parts = []
        for part in system.get('partitions', []):
            part = dict(part)
            change(system['name'], part)
            parts.append(part)
        system['partitions'] = parts
        systems.append(system)
    configuration['systems'] = systems
    return configuration


def validate(site_directory, systems, partitions):
    '''References and compliance definition of a site directory, validated.'''
    refs = load_references(os.path.join(site_directory, REFERENCES), systems, partitions)
    comp = load_compliance(os.path.join(site_directory, COMPLIANCE), refs)
    return refs, comp


def load_site(spec):
    '''The SiteDef of a site name or directory. A directory with references.yaml and no
    config.py is judged by those references, unchecked against systems it does not name.'''
    directory = site_dir(spec)
    config = os.path.join(directory, 'config.py')
    if os.path.isfile(config):
        name, systems, partitions = site_systems(config)
    else:
        name, systems, partitions = None, [], []
    refs, comp = validate(directory, systems, partitions)
    return SiteDef(name or os.path.basename(directory), directory, systems, partitions,
                   refs, comp)
