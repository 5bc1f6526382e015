'''A case's check as one typed value, parsed once from the name ReFrame gives it.

ReFrame names a test case by its display name, `EthTest %interface=lo`: the check class
and its parameters. `--distribute` adds two parameters, `.part` and `.nid` (the node it
is pinned to), `--repeat` one, `.repeat_no`; none of them makes another check. A perflog
names the case by its unique name, `MemTest_3` (a variant of the class). A job document's
case is named by its kernel (`mem-test`).

    CheckName.of('MemTest %.part=sys:x86 %.nid=n1')  -> check 'MemTest', node 'n1'
    CheckName.of('MemTest_3', checks={'MemTest'})    -> check 'MemTest'
    .label                                           -> 'MemTest' / 'EthTest %interface=lo'
'''

import re
from dataclasses import dataclass

from .. import kernels

#: ReFrame's parameters of --distribute and --repeat: not part of the check's name.
GENERATED_PARAMS = ('.part', '.nid', '.repeat_no')
_PARAM = re.compile(r'%([\w.]+)=(\S*)')
_VARIANT = re.compile(r'(\w+)_\d+')


@dataclass(frozen=True)
class CheckName:
    check: str              # the check class ('MemTest'), or a job document's kernel
    params: tuple = ()      # ((name, value), ...): the check's own parameters
    node: str = ''          # the node --distribute pinned it to ('' : none)

    @classmethod
    def of(cls, name, checks=None):
        '''The CheckName of a display name, a perflog's unique name or a kernel's name.
        `checks`: the suite's check classes (default: the kernels' checks), by which a
        unique name `MemTest_3` is read as MemTest.'''
        text = name if isinstance(name, str) else ''
        head = text.split(' %')[0].split()
        check = head[0] if head else ''
        pairs = _PARAM.findall(text)
        params = tuple((k, v) for k, v in pairs if k not in GENERATED_PARAMS)
        node = next((v for k, v in pairs if k == '.nid'), '')
        m = _VARIANT.fullmatch(check)
        if m and not pairs:
            known = checks if checks is not None else {
                k.check for k in kernels.KERNELS.values()}
            if m.group(1) in known:
                check = m.group(1)
        return cls(check, params, node)

    @property
    def param_dict(self):
        return dict(self.params)

    @property
    def label(self):
        '''The check as one distribution of the fleet has it: 'EthTest %interface=lo'.'''
        return self.check + ''.join(f' %{k}={v}' for k, v in self.params)
