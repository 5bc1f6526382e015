'''One setting's finding, and what a list of them comes to (the counts and the verdict that
the JSON document, the text output and the report share).'''

from dataclasses import dataclass, field

from ..store.result import SettingStatus

# The statuses under the names the checks, the report and the verdict have always used
# (pf.PASS, ...): the enum's members, so the words themselves live in store/result.py only.
PASS = SettingStatus.PASS
FAIL = SettingStatus.FAIL
WARN = SettingStatus.WARN
UNKNOWN = SettingStatus.UNKNOWN
SKIP = SettingStatus.SKIP

REQUIRED, RECOMMENDED = 'required', 'recommended'


@dataclass
class Finding:
    setting: str        # e.g. 'cpu.governor', 'net.eth0.mtu', 'pcie.0000:17:00.0'
    status: SettingStatus
    value: str          # what was found
    expected: str       # what the compliance document wants
    fix: str            # the command (or action) that fixes it
    level: str          # required or recommended
    affects: list = field(default_factory=list)   # check families it can spoil
    source: str = ''    # where it was read
    note: str = ''      # why unknown, or what to look at


def summary(findings):
    '''{status: count, required_failed, required_unknown, verdict}. Unknown is not a pass:
    a setting that could not be read leaves the verdict UNDETERMINED, never COMPLIANT.'''
    count = {s: sum(f.status == s for f in findings) for s in SettingStatus}
    req = [f for f in findings if f.level == REQUIRED]
    count['required_failed'] = sum(f.status == FAIL for f in req)
    count['required_unknown'] = sum(f.status == UNKNOWN for f in req)
    if count[FAIL]:
        verdict = 'NOT COMPLIANT'
    elif count[UNKNOWN]:
        verdict = 'UNDETERMINED'
    else:
        verdict = 'COMPLIANT'
    count['verdict'] = verdict
    return count
