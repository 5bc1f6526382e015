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
  4.6    the same keys in the processor a newer      repair_topology_cache(): 4.5 reads
         ReFrame detected and cached in              such a file without them (before,
         ~/.reframe/topology (shared by all)         it stopped on it)
  4.6    general/save_log_files in the              launch adds --save-log-files (4.5's
         configuration honoured                      command-line default overrode it)
  4.7    the results database (configuration         has_results_storage():
         section 'storage', --performance-compare,   adapt_configuration() leaves the
         --list-stored-sessions)                     section out before
  4.8    a reference of 0 has absolute bounds        repair_zero_references(): before 4.8,
         (before: 0 * (1 + t) is 0, read as "no      ReFrame's assert_reference judges a
         bound", so [0, null, 0] judged nothing)     reference of 0 as 4.8 does
  4.8    expected failures in references (xfail)     has_xfail()
  4.9    sanity.reference_bounds                     has_reference_bounds()
  4.10   RegressionTestPlugin (RegressionMixin       PLUGIN_BASE
         deprecated)
  4.10   external references ('$ref'),               has_external_references()
         --reference-prefix

Older than OLDEST: Site stops the configuration with a ConfigError naming the range
(too_old()). Newer than NEWEST_TESTED runs as the newest does; nothing is refused.
'''

import json
import os
import re

import reframe
import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

__all__ = ['NEWEST_TESTED', 'OLDEST', 'PLUGIN_BASE', 'RFM_VERSION', 'adapt_configuration',
           'at_least', 'has_external_references', 'has_processor_info',
           'has_reference_bounds', 'has_results_storage', 'has_xfail', 'parse_version',
           'processor_keys', 'processor_platform', 'remember_platform', 'repair',
           'repair_topology_cache', 'repair_zero_references', 'too_old', 'version_text']

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


def has_xfail():
    '''References may mark expected failures (builtins.xfail, 4.8).'''
    return at_least(4, 8)


def has_reference_bounds():
    '''reframe.utility.sanity.reference_bounds (4.9).'''
    return hasattr(sn, 'reference_bounds')


def has_external_references():
    '''Checks may take their references from a file ('$ref', --reference-prefix; 4.10).'''
    return at_least(4, 10)


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
    systems = []
    for system in configuration.get('systems', []):
        system = dict(system)
        parts = []
        for part in system.get('partitions', []):
            part = dict(part)
            proc = part.get('processor')
            if proc:
                if proc.get('platform'):
                    remember_platform(f"{system['name']}:{part['name']}", proc['platform'])
                part['processor'] = {k: v for k, v in proc.items() if k in known}
            parts.append(part)
        system['partitions'] = parts
        systems.append(system)
    if 'systems' in configuration:
        configuration['systems'] = systems
    return configuration


# ---- the processor a newer ReFrame detected (4.6) ---------------------------------------

def _processor_only_known(validate):
    def validate_info(info, schema):
        if (isinstance(info, dict) and isinstance(schema, dict) and
                schema.get('$ref') == '#/defs/processor_info'):
            known = set(schema['defs']['processor_info']['properties'])
            info = {k: v for k, v in info.items() if k in known}
        return validate(info, schema)
    validate_info.cobalt_bench_repair = True
    return validate_info


def repair_topology_cache():
    '''ReFrame keeps the processor it detected for a partition in
    ~/.reframe/topology/<system>-<partition>/processor.json, shared by every ReFrame of the
    user. From 4.6 on the file holds 'platform', 'model' and 'vendor', and ReFrame 4.5
    stops on it ("could not validate meta-config file"): a machine where a newer ReFrame
    ran cannot run 4.5 at all. There, ReFrame 4.5 reads such a file without those keys
    (its autodetect's validation, which no later release changes, is wrapped); the file
    stays as it is. Returns whether it repaired.'''
    if has_processor_info():
        return False
    from reframe.frontend import autodetect
    if getattr(autodetect._validate_info, 'cobalt_bench_repair', False):
        return False
    autodetect._validate_info = _processor_only_known(autodetect._validate_info)
    return True


# ---- references of 0 (4.8) -------------------------------------------------------------

@sn.deferrable
def _assert_reference(val, ref, lower_thres=None, upper_thres=None, msg=None):
    '''ReFrame 4.8's assert_reference: for a reference of 0 the thresholds are the bounds
    themselves; for any other, fractions of it (negated for a negative reference).'''
    lower_limit = -1 if ref > 0 else None
    if lower_thres is not None and not ((lower_limit is None or lower_thres >= lower_limit)
                                        and lower_thres <= 0):
        raise SanityError(f'invalid low threshold value: {lower_thres}')
    upper_limit = 1 if ref < 0 else None
    if upper_thres is not None and not (upper_thres >= 0 and
                                        (upper_limit is None or upper_thres <= upper_limit)):
        raise SanityError(f'invalid high threshold value: {upper_thres}')

    def bound(thres, open_end):
        if thres is None:
            return open_end
        if ref == 0:
            return thres
        return ref * (1 + (-thres if ref < 0 else thres))

    lower = bound(lower_thres, float('-inf'))
    upper = bound(upper_thres, float('inf'))
    if not lower <= val <= upper:
        error_msg = msg or '{0} is beyond reference value {1} (l={2}, u={3})'
        raise SanityError(error_msg.format(val, ref, lower, upper))
    return True


def repair_zero_references():
    '''Before ReFrame 4.8 a reference of 0 judged nothing (its bounds, 0 * (1 + t), were
    read as "none"): `average_loss: [0, null, 0]` passed any loss. There, ReFrame's
    assert_reference (which its performance stage calls) becomes 4.8's; from 4.8 on
    nothing changes. Returns whether it repaired.'''
    if at_least(4, 8) or sn.assert_reference is _assert_reference:
        return False
    sn.assert_reference = _assert_reference
    return True


def repair():
    '''Every repair the running ReFrame needs (none from 4.8 on): what Site does when a
    site configuration is loaded.'''
    repair_topology_cache()
    repair_zero_references()
