'''The InfiniBand ports of a machine and which port receives when each one sends.

The COBALT2 compliance document: ib_write_bw from each InfiniBand port, the receiver on
another device ("physically distinct cards"), devices listed in /sys/class/infiniband.
'''

import os

SYSFS = '/sys/class/infiniband'


def _card(sysfs, device):
    '''The PCI card a device sits on (its PCI address without the function), or the device
    name when sysfs does not say.'''
    try:
        pci = os.path.basename(os.path.realpath(os.path.join(sysfs, device, 'device')))
    except OSError:
        return device

    return pci.rsplit('.', 1)[0] if ':' in pci else device


def ports(sysfs=SYSFS):
    '''['mlx4_0:1', 'mlx4_0:2', 'mlx4_1:1', ...]: every port of every device.'''
    try:
        devices = sorted(os.listdir(sysfs))
    except OSError:
        return []

    found = []
    for dev in devices:
        try:
            numbers = sorted(int(p) for p in os.listdir(os.path.join(sysfs, dev, 'ports'))
                             if p.isdigit())
        except OSError:
            numbers = [1]   # a device without a ports directory: perftest's default port

        found += [f'{dev}:{n}' for n in numbers]

    return found


def pairs(port_list, sysfs=SYSFS):
    '''[(sender, receiver)]: each port sends once, to the first port (in list order,
    starting after the sender's device) of a device on another card; failing that, of
    another device. [] when there is only one device.'''
    def device(port):
        return port.rsplit(':', 1)[0]

    result = []
    for i, sender in enumerate(port_list):
        others = [p for p in port_list[i + 1:] + port_list[:i] if device(p) != device(sender)]
        if not others:
            continue

        card = _card(sysfs, device(sender))
        elsewhere = [p for p in others if _card(sysfs, device(p)) != card]
        result.append((sender, (elsewhere or others)[0]))

    return result


def devices(port_list):
    return sorted({p.rsplit(':', 1)[0] for p in port_list})
