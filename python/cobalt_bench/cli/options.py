'''`cobalt-bench options [--env] KERNEL [NAME=VALUE]...`: a kernel's typed options as its
command line, checked against the kernel's own description (kernels.described), for the
job scripts (jobs/lib/cobalt-job.sh, cb_typed_options). Each argument is printed on a line
of its own, for `mapfile`: nothing is evaluated, by this command or the shell.'''

import os
import sys

from ..errors import UsageError
from ..kernels import described

DESCRIPTION = ('Print a kernel\'s options given by name and value (stations=1 '
               'desired_rate=8) as its command line, one argument a line, after checking '
               'each against the kernel\'s description: its name, its type, its range.')
EPILOG = '''\
NAME is the option's long name, with - or _ (desired_rate, desired-rate); a flag takes
true or false. With --env the options come from the environment too, as
CB_OPT_<KERNEL>_<NAME> variables (CB_OPT_MEM_TEST_STATIONS=1; the kernel's name in capitals
with _ for -); a NAME=VALUE argument wins over its variable.

exit status: 0 printed, 2 an unknown option, a value of the wrong type or out of its
range (named, with what it takes), 3 the kernels' descriptions cannot be read.'''


def add_arguments(parser):
    parser.add_argument('kernel', metavar='KERNEL', help='the kernel (mem-test, cb-linktest, '
                                                        '...)')
    parser.add_argument('options', nargs='*', metavar='NAME=VALUE')
    parser.add_argument('--env', action='store_true',
                        help='also take the CB_OPT_<KERNEL>_<NAME> variables')


def command(kernel, words, from_env, environ=None):
    if kernel not in described.descriptions():
        raise UsageError(f'no kernel {kernel!r}; the kernels: '
                         f'{", ".join(sorted(described.descriptions()))}')
    texts = described.options_from_env(kernel, os.environ if environ is None else environ) \
        if from_env else {}
    # Where each option was given, for the error that names it: its variable or its word.
    given = {key: f'{described.env_prefix(kernel)}{key.upper()}={text}'
             for key, text in texts.items()}
    for word in words:
        name, sep, value = word.partition('=')
        if not sep or not name:
            raise UsageError(f'{word!r}: expected NAME=VALUE (stations=1)')
        texts[name.replace('-', '_')] = value
        given[name.replace('-', '_')] = word
    try:
        args = described.text_option_args(kernel, texts)
    except described.OptionError as err:
        raise UsageError(f'{given[err.key]}: {err.problem}' if err.key in given
                         else str(err)) from None
    except ValueError as err:
        raise UsageError(str(err)) from None
    for arg in args:
        sys.stdout.write(arg + '\n')
    return 0
