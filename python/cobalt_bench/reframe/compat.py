'''The ReFrame that runs cobalt-bench, and what follows from its version: the one place
that knows what came in which ReFrame release.

cobalt-bench supports ReFrame 4.5 through 4.10 (docs/reframe.md: where a site gets which,
how each is tested). Sites have what their package manager gives them: Spack's builtin
4.7.3, EasyBuild's 4.10.2, PyPI's 4.10.4 (requirements.txt's pin). What differs among
them, and what cobalt-bench does about it:

  since  what                                        here
  4.6    processor 'platform', 'model', 'vendor'     adapt_configuration() (Site.checked)
         in a partition's configuration              keeps them out of an older
                                                     ReFrame's configuration;
                                                     processor_platform() still tells
                                                     the platform
  4.6    the same keys in the processor a newer      adapt_configuration(): before 4.6,
         ReFrame detected and cached in              a site's own configuration names
         ~/.reframe/topology (shared by all)         the cached processor without them,
                                                     so 4.5 never reads the file
  4.6    general/save_log_files in the              launch adds --save-log-files (4.5's
         configuration honoured                      command-line default overrode it)
  4.7    the results database (configuration         has_results_storage():
         section 'storage', --performance-compare,   adapt_configuration() leaves the
         --list-stored-sessions)                     section out before
  4.8    a reference of 0 has absolute bounds        judges_zero_references(): before,
         (before: 0 * (1 + t) is 0, read as "no      SiteReferences (the checks' own
         bound", so [0, null, 0] judged nothing)     hook) judges it as 4.8 does
  4.8    expected failures in references (xfail)     references.py (builtins.xfail)
  4.10   RegressionTestPlugin (RegressionMixin       PLUGIN_BASE
         deprecated)

Nothing here changes ReFrame or anything it loaded: what an older ReFrame lacks is done in
cobalt-bench's own classes and its own sites' configurations.

Older than OLDEST: Site stops the configuration with a ConfigError naming the range
(too_old()). Newer than NEWEST_TESTED runs as the newest does; nothing is refused.
'''

import json
import os
import re

import reframe

from ..site.loader import each_partition

__all__ = ['NEWEST_TESTED', 'OLDEST', 'PLUGIN_BASE', 'RFM_VERSION', 'adapt_configuration',
           'at_least', 'has_results_storage', 'judges_zero_references',
           'parse_version', 'processor_keys', 'processor_platform', 'too_old',
           'version_text']

#: The oldest ReFrame cobalt-bench supports, and the newest its CI runs.
OLDEST = (4, 5)
NEWEST_TESTED = (4, 10, 4)


def parse_version(text):
    '''(major, minor, patch) of a ReFrame version string ('4.10.4', '4.11.0-dev.2').'''
    m = re.match(r'\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?', str(text))
    if not m:
        raise ValueError(f'not a ReFrame version: {text!r}')
    return tuple(int(p or 0) for p in m.groups())


#: The running ReFrame's version, (major, minor, patch).
RFM_VERSION = parse_version(reframe.VERSION)


def version_text(version):
    return '.'.join(str(p) for p in version)


def at_least(*version):
    '''Whether the running ReFrame is `version` (4, 7) or newer.'''
    return RFM_VERSION >= tuple(version)


def too_old(version=None):
    '''Why ReFrame `version` (default: the running one) cannot run cobalt-bench, or ''.'''
    version = RFM_VERSION if version is None else tuple(version)
    if version >= OLDEST:
        return ''
    return (f'ReFrame {version_text(version)} is older than the oldest cobalt-bench '
            f'supports ({version_text(OLDEST)}; supported: {version_text(OLDEST)} to '
            f'{version_text(NEWEST_TESTED[:2])}.x, docs/reframe.md)')


def has_processor_info():
    '''A partition's processor may name its 'platform', 'model' and 'vendor' (4.6).'''
    return at_least(4, 6)


def has_results_storage():
    '''ReFrame keeps a results database: configuration section 'storage' (4.7).'''
    return at_least(4, 7)


#: The base of a class that adds variables and hooks to checks: RegressionTestPlugin
#: since 4.10 (which deprecates RegressionMixin, the same thing before it).
PLUGIN_BASE = getattr(reframe, 'RegressionTestPlugin', None) or reframe.RegressionMixin


# ---- processor platform (4.6) ----------------------------------------------------------

_PLATFORMS = {}     # 'system:partition' -> platform, kept where the schema has no key


def remember_platform(partition, platform):
    '''Keep the platform of `partition` ('system:partition') that an older ReFrame's
    configuration cannot hold (Site does this while it leaves the key out).'''
    _PLATFORMS[partition] = platform


def processor_platform(partition):
    '''The instruction set of a ReFrame partition's processor as `uname -m` says it
    ('aarch64'), or None: ReFrame's processor `platform` (4.6), else the one Site kept.'''
    platform = getattr(partition.processor, 'platform', None)
    return platform or _PLATFORMS.get(partition.fullname)


# ---- the configuration, as this ReFrame's schema takes it -------------------------------

def _schema():
    path = os.path.join(os.path.dirname(reframe.__file__), 'schemas', 'config.json')
    with open(path) as fp:
        return json.load(fp)


def processor_keys():
    '''The keys this ReFrame's schema allows in a partition's processor.'''
    return set(_schema()['defs']['processor_info']['properties'])


def adapt_configuration(configuration):
    '''A site configuration (a dict, as a site's config.py builds it) as the running
    ReFrame's schema takes it: a copy without the results database before 4.7 ('storage'),
    and before 4.6 with partitions' processors without the keys 4.6 added ('platform',
    'model', 'vendor'; the platform is kept: processor_platform()). From 4.7 on, a copy of
    the same.'''
    configuration = dict(configuration)
    if not has_results_storage():
        configuration.pop('storage', None)
    if has_processor_info():
        return configuration
    known = processor_keys()

    def without_newer_keys(system, part):
        proc = part.get('processor') or _cached_processor(system, part['name'], known)
        if proc:
            if proc.get('platform'):
                remember_platform(f"{system}:{part['name']}", proc['platform'])
            part['processor'] = {k: v for k, v in proc.items() if k in known}

    configuration = each_partition(configuration, without_newer_keys)
    # On a host that none of the site's systems names, ReFrame takes its own 'generic'
    # system, whose processor it reads from the same cache: this configuration's copy of
    # it names the processor too.
    generic = _cached_processor('generic', 'default', known)
    systems = configuration.get('systems')
    if generic and isinstance(systems, list) and not any(
            isinstance(s, dict) and s.get('name') == 'generic' for s in systems):
        configuration['systems'] = systems + [{
            'name': 'generic', 'descr': "ReFrame's generic system, its processor named",
            'hostnames': ['.*'], 'partitions': [{
                'name': 'default', 'scheduler': 'local', 'launcher': 'local',
                'environs': ['builtin'],
                'processor': {k: v for k, v in generic.items() if k in known}}]}]
    return configuration


# ---- the processor a newer ReFrame detected (4.6) ---------------------------------------

def _cached_processor(system, partition, known):
    '''The processor a ReFrame detected for a partition and cached in
    ~/.reframe/topology/<system>-<partition>/processor.json, shared by every ReFrame of
    the user ({} where none or unreadable). From 4.6 on the file holds 'platform', 'model'
    and 'vendor', and ReFrame 4.5 stops on it ("could not validate meta-config file"):
    there, a cobalt-bench site's own configuration names the processor itself (without
    those keys, adapt_configuration), so that 4.5 never reads the file; the file, and
    ReFrame, stay as they are. `known`: the keys the running ReFrame's schema allows.'''
    path = os.path.join(os.path.expanduser('~'), '.reframe', 'topology',
                        f'{system}-{partition}', 'processor.json')
    try:
        with open(path) as fp:
            info = json.load(fp)
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) and set(info) - known else {}


# ---- references of 0 (4.8) -------------------------------------------------------------

def judges_zero_references():
    '''ReFrame judges a reference of 0 with absolute bounds (4.8): before, 0 * (1 + t) was
    read as "no bound" and `average_loss: [0, null, 0]` judged nothing; there
    SiteReferences (a cobalt-bench check's own hook) judges it.'''
    return at_least(4, 8)
