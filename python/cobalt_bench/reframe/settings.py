'''The site settings: every key the cobalt-bench checks read from a partition's `extras`,
declared once with its type, default and meaning.

A site configuration tunes the checks through one namespace of its partitions' extras,
`cobalt_bench` (the checks never name a site), beside whatever other suites keep there:

    'extras': {'cobalt_bench': {'mem_test_opts': '--stations 1 --desired-rate 8',
                                'osu_collective_tasks': 4},
               'mem_per_node': 512},        # another suite's key: left alone

The checks read them only through this table (`SiteSettings.site_setting`), and every
check validates the namespace of every partition of the system when ReFrame instantiates
it: a key inside `cobalt_bench` that is not declared here, or a value of the wrong type,
is a ConfigError naming the partition, the key and what is allowed, never a silent
default. A key that is absent takes its default. Keys outside the namespace belong to other
suites and are never looked at, whatever their names.

    python3 -c 'from cobalt_bench.reframe import settings; print(settings.describe())'
prints the table.
'''

import difflib
import re
import secrets
import shlex
from dataclasses import dataclass

import reframe.core.runtime as rt
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, variable
from reframe.core.exceptions import ConfigError

from .. import kernels
from ..kernels import described
from . import placement
from .references import SiteReferences

__all__ = ['DOLPHIN', 'NAMESPACE', 'SETTINGS', 'Setting', 'SiteSettings', 'check_extras',
           'check_system', 'describe', 'partition_value', 'session_id',
           'shell_arg', 'shell_args', 'shell_words',
           'site_extras', 'typed_name',
           'value', 'values_of_partitions']


@dataclass(frozen=True)
class Setting:
    '''One key of a partition's extras.'''

    name: str
    type: object        # a class, a tuple of classes, or a reframe.utility.typecheck type
    default: object     # the value when the key is absent; None: the check decides
    doc: str
    keys: tuple = ()    # for a dict setting: the Settings of its own keys
    program: str = ''   # for a kernel's typed options: the kernel (its --describe)

    @property
    def type_name(self):
        types = self.type if isinstance(self.type, tuple) else (self.type,)
        names = [getattr(t, '__name__', str(t)) for t in types]
        if self.default is None:
            names.append('None')
        return ' or '.join(names)

    def accepts(self, value):
        if value is None:
            return self.default is None

        if isinstance(value, bool):   # a bool is an int to Python, not to a site
            types = self.type if isinstance(self.type, tuple) else (self.type,)
            return bool in types

        return isinstance(value, self.type)


_STR_LIST = typ.List[str]

#: The keys of extras['dolphin'] (reframe_checks/dolphin.py).
DOLPHIN = (
    Setting('nodes', typ.Dict[str, int], {},
            "the cluster's Dolphin nodes and their NodeIds ('Local node-id' of `query`); "
            'none: the all-node tests run on this node alone'),
    Setting('pair', _STR_LIST, None,
            'server (A) and client (B) of the performance tests, two names of nodes'),
    Setting('run_on', str, 'ssh -o BatchMode=yes {host}',
            "how to run a command on a node, '{host}' replaced ('' = here; Slurm: "
            "'srun -N1 -n1 -w {host}')"),
    Setting('tools', typ.Dict[str, str], {},
            'where the Dolphin tools are, by name; a tool not named is looked for on PATH, '
            'then in /opt/DIS/bin and /opt/DIS/sbin'),
    Setting('server_start_s', (int, float), 2,
            'seconds the server side of a performance test gets to start'),
)

def typed_name(options_setting):
    '''The typed options' setting beside a kernel's options string: mem_test_opts ->
    mem_test.'''
    return options_setting[:-len('_opts')] if options_setting.endswith('_opts') else ''


def _typed(options_setting, program):
    return Setting(typed_name(options_setting), dict, {},
                   f"{program}'s options by name, typed, e.g. {{'duration': 10}}: each "
                   f"checked against `{program} --describe`; after {options_setting}",
                   program=program)


_SETTINGS = [
    # Kernels of cobalt-bench (KernelJsonTest): options for the kernel, split like a shell,
    # one per kernel's descriptor (cobalt_bench.kernels).
    *(Setting(k.options_setting, str, k.options_default, k.options_doc)
      for k in kernels.KERNELS.values()),
    *(Setting(c.options_setting, str, c.options_default, c.options_doc)
      for c in kernels.CAPACITY.values()),
    # The same kernels' options by name and typed, checked against the kernel's own
    # description when ReFrame loads the configuration (kernels.described).
    *(_typed(k.options_setting, k.name) for k in kernels.KERNELS.values() if k.units is None),
    *(_typed(c.options_setting, k.name) for k in kernels.KERNELS.values()
      for c in ([k.capacity] if k.capacity else [])),
    Setting('eth_test_send_opts', str, '',
            "eth-test-send options (EthTest); '': the compliance load (12 streams, 9 Gbit/s)"),
    Setting('eth_test_interfaces', _STR_LIST, ['lo'],
            "interfaces EthTest tests, one run each; default: the loopback interface, with "
            "the sender on this node (tests the receiving software, not a NIC: a site names "
            "its NICs); []: one run, skipped, saying so"),
    Setting('eth_test_sender', str, '',
            "command prefix that starts eth-test-send on the sending machine, e.g. 'ssh "
            "sender01'; '': on this node (tests the receiving software, not the NIC)"),
    Setting('linktest_tasks', int, 2, 'cb-linktest tasks in all (an even number)'),
    Setting('linktest_tasks_per_node', int, 1,
            'cb-linktest tasks per node (1: every pair is a node pair)'),
    # MPI launching (CbLinkTest, the OSU checks).
    Setting('mpi_launcher_options', _STR_LIST, [],
            "options of the partition's MPI launcher, e.g. ['--mpi=pmix'] for srun with Open "
            "MPI, ['--mpi=pmi2'] with MPICH (docs/mpi.md)"),
    # OSU micro-benchmarks (OsuPt2Pt, OsuCollective).
    Setting('osu_opts', str, '', "options of every OSU benchmark; '': OSU's own"),
    Setting('osu_sizes', typ.List[int], None,
            'message sizes to report; none: every size OSU measures by default'),
    Setting('osu_collective_tasks', int, 4, 'tasks of the OSU collectives'),
    Setting('osu_collective_tasks_per_node', int, 1, 'tasks per node of the OSU collectives'),
    Setting('osu_path', str, '',
            'an OSU install prefix or build tree, where OSU is not on PATH (after '
            '$COBALT_OSU_PATH)'),
    Setting('osu_env_vars', typ.Dict[str, str], {},
            'environment variables of the OSU runs, e.g. MPI tuning'),
    # InfiniBand (IbWriteBw).
    Setting('ib_ports', _STR_LIST, None,
            "ports IbWriteBw sends from ('device:port'); none: every port in "
            '/sys/class/infiniband'),
    Setting('ib_write_bw_opts', str, '', "more ib_write_bw options for both sides, e.g. '-F'"),
    # Every check: its environment, and the site whose references judge it.
    Setting('prog_environ', str, '',
            "the programming environment cobalt-bench's checks run with on this partition "
            "(each check runs once per partition); '': the partition's first"),
    Setting('site', str, '',
            "the site directory whose references.yaml judges cobalt-bench's checks on this "
            "partition (a cobalt-bench Site sets its own); '': $COBALT_BENCH_SITE, else "
            "ReFrame's reference prefix (shared with other suites: their entries are "
            "ignored), else none: the checks run unjudged"),
    # Dolphin PCIe interconnect (reframe_checks/dolphin.py).
    Setting('dolphin', dict, {}, 'the Dolphin interconnect of the partition: ' +
            ', '.join(s.name for s in DOLPHIN), keys=DOLPHIN),
]

#: Every site setting, by name.
SETTINGS = {s.name: s for s in _SETTINGS}

#: The key of a partition's extras that holds cobalt-bench's settings.
NAMESPACE = 'cobalt_bench'


def _unknown(key, allowed, where):
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ''
    return ConfigError(f"{where}: unknown key {key!r}{hint}; the keys cobalt-bench knows: "
                       f"{', '.join(sorted(allowed))} (cobalt_bench.reframe.settings)")


def _check_value(setting, value, where):
    if not setting.accepts(value):
        raise ConfigError(f'{where} must be {setting.type_name}, not '
                          f'{type(value).__name__} {value!r} ({setting.doc})')

    if setting.program and value is not None:
        try:
            described.option_args(setting.program, value)
        except ValueError as err:
            raise ConfigError(f'{where}{"" if str(err).startswith("[") else ": "}{err}')
    if setting.keys and value is not None:
        known = {s.name: s for s in setting.keys}
        for key, sub in value.items():
            if key not in known:
                raise _unknown(key, known, where)
            _check_value(known[key], sub, f'{where}[{key!r}]')


def _namespace(extras):
    return (extras or {}).get(NAMESPACE) or {}


def check_extras(extras, partition):
    '''Raise ConfigError unless every key of the cobalt-bench namespace of `extras` (the
    extras of the partition named `partition`, e.g. 'local:default') is a site setting with
    a value of its type. Other keys are other suites' business.'''
    extras = extras or {}
    where = f'partition {partition!r}: extras[{NAMESPACE!r}]'
    own = extras.get(NAMESPACE)
    if own is not None and not isinstance(own, dict):
        raise ConfigError(f'{where} must be a dict of cobalt-bench settings, not '
                          f'{type(own).__name__} {own!r}')
    for key, val in (own or {}).items():
        if key not in SETTINGS:
            raise _unknown(key, SETTINGS, where)
        _check_value(SETTINGS[key], val, f'{where}[{key!r}]')


def check_system(system):
    '''check_extras for every partition of a ReFrame system.'''
    for part in system.partitions:
        check_extras(part.extras, part.fullname)


def site_extras(extras):
    '''The cobalt-bench settings a partition's extras give (its namespace).'''
    return dict(_namespace(extras))


def value(extras, name):
    '''The setting `name` from a partition's extras, or its default (for a dict setting
    with keys: the value with the defaults of its absent keys filled in).'''
    setting = SETTINGS[name]    # a KeyError here is a check reading an undeclared key
    val = site_extras(extras).get(name)
    if val is None:
        val = setting.default
    if setting.keys:
        val = {**{s.name: s.default for s in setting.keys}, **(val or {})}
    elif isinstance(val, (list, dict)):
        val = type(val)(val)    # a copy: the caller may change it
    return val


#: Keys other suites' conventions keep at the top of a partition's extras that cobalt-bench
#: reads (never requires, never checks): EESSI's 'gpu_vendor' (placement: which GPUs).
CONVENTIONS = ('gpu_vendor',)


def partition_value(part, name):
    '''The setting `name` of a ReFrame partition (or a CONVENTIONS key's value, None where
    absent).'''
    if name in CONVENTIONS:
        return (part.extras or {}).get(name)
    return value(part.extras, name)


_VARIABLE = re.compile(r'\$(\w+|\{\w+\})')


def _double_quoted(text):
    return re.sub(r'([\\"`$])', r'\\\1', text)


def shell_arg(word):
    '''One word of a site's options, quoted for the job script: the shell runs nothing in
    it (`$(...)`, backticks, `;`, `|`, newlines stay text); only `$NAME` and `${NAME}` still
    expand, so that options may name the job's environment (local-ib's $COBALT_IB_LIDS).'''
    if re.fullmatch(r'[\w@%+=:,./-]+', word):
        return word     # nothing the shell would read: as it is, for a readable command
    out, pos = [], 0
    for m in _VARIABLE.finditer(word):
        out += [_double_quoted(word[pos:m.start()]), m.group(0)]
        pos = m.end()
    out.append(_double_quoted(word[pos:]))
    return '"' + ''.join(out) + '"'


def session_id():
    '''A fresh session id for the two ends of an eth-test run (eth-test's --session: a
    non-zero 64-bit number), so that the receiver measures its own sender only.'''
    return f'{secrets.randbits(63) | 1:#x}'


def shell_args(opts):
    '''An options setting (a string, split like a shell) as quoted words (shell_arg).'''
    return [shell_arg(w) for w in shlex.split(opts)]


def shell_words(opts):
    '''An options setting (a string, split like a shell) quoted again word by word, for a
    command line.'''
    return shlex.join(shlex.split(opts))


def values_of_partitions(name):
    '''[(partition, value)] of the setting `name` for every partition of the system
    ReFrame runs for (validated; [] where ReFrame has no system, e.g. outside a run). For
    what a check's parameters are generated from, before any check exists.'''
    try:
        system = rt.runtime().system
    except Exception:   # loaded without a configured system
        return []

    check_system(system)
    return [(p, partition_value(p, name)) for p in system.partitions]


class SiteSettings(SiteReferences):
    '''What every cobalt-bench check has: the site settings of its partition, validated;
    the partitions it fits (`placement`, placement.py); the site's references
    (references.py).'''

    #: Which partitions the check is made for (placement.PLACEMENTS).
    placement = variable(str, value='compute')

    @run_after('init')
    def check_site_settings(self):
        # Every partition, not only this check's: a typo in any of them is a site error.
        check_system(rt.runtime().system)

    @run_after('init')
    def select_partitions(self):
        # A check narrows this further in a hook of its own (hooks of a base run first).
        self.valid_systems = placement.partitions_for(self.placement, rt.runtime().system,
                                                      partition_value)

    @run_after('init')
    def select_environment(self):
        # Once per partition, not once per environment: the site's choice, else the
        # partition's first (what a benchmark of the hardware needs of an environment is
        # its kernels on PATH, the same in each).
        parts = {p.fullname: p for p in rt.runtime().system.partitions}
        chosen = set()
        for name in self.valid_systems:
            part = parts.get(name)
            if part is None or not part.environs:
                continue
            named = partition_value(part, 'prog_environ')
            names = [e.name for e in part.environs]
            if named and named not in names:
                raise ConfigError(f"partition {name!r}: extras[{NAMESPACE!r}]['prog_environ'] "
                                  f"{named!r} is not one of its environments "
                                  f"({', '.join(names)})")
            chosen.add(named or names[0])
        self.valid_prog_environs = sorted(chosen) or ['*']

    def site_dir_of(self, part):
        '''The site directory the partition's settings name for the references ('' none).'''
        check_extras(part.extras, part.fullname)
        return partition_value(part, 'site')

    def site_setting(self, name):
        '''The setting `name` (SETTINGS) of the partition the check runs on.'''
        return partition_value(self.current_partition, name)


def describe():
    '''The table as text: every setting, its type, default and meaning.'''
    lines = []
    for s in _SETTINGS:
        lines.append(f'{s.name}  ({s.type_name}, default {s.default!r})\n    {s.doc}')
        lines += [f'    {s.name}.{k.name}  ({k.type_name}, default {k.default!r})\n'
                  f'        {k.doc}' for k in s.keys]
    return '\n'.join(lines)
