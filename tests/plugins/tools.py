"""Third-party tools' outputs as their documents recorded them (tests/data/), and
stand-ins that print them where the tools or their hardware are absent.

- ``changed()``: a failing variant of a recorded output.
- ``dolphin_recorded()`` and the ``dolphin_fake_tools`` fixture: Dolphin's tools as
  Dolphin's manual shows their output (there is no Dolphin hardware here).
- ``PERFTEST_RECORDED``: ib_write_bw's output in the COBALT2 compliance document.
"""

from __future__ import annotations

import pytest

from plugins.checkout import DATA

DOLPHIN_TOOLS = ["dis_diag", "sciconntest", "dma_bench", "scipp", "intr_bench"]
DOLPHIN_RECORDED = {"dis_diag": "dis_diag-MXH830.txt", "sciconntest": "sciconntest.txt",
                    "dma_bench": "dma_bench-MXH930.txt", "scipp": "scipp-MXH830.txt",
                    "intr_bench": "intr_bench.txt"}
PERFTEST_RECORDED = DATA / "perftest" / "ib_write_bw-cobalt2.txt"


def changed(text: str, old: str, new: str, count: int = 1) -> str:
    """A failing variant of a recorded output; the change must apply."""
    assert text.count(old) >= count, old
    return text.replace(old, new, count)


def dolphin_recorded(tool: str) -> str:
    """The output of one of Dolphin's tools recorded in Dolphin's manual."""
    return (DATA / "dolphin" / DOLPHIN_RECORDED[tool]).read_text()


_DOLPHIN_FAKE = """#!/bin/sh
# Stands in for Dolphin's {tool} (no Dolphin hardware here): prints a real output recorded
# in Dolphin's manual; per node, {data}/{tool}-<node>.txt if the test wrote one.
case " $* " in *" -server "*) echo "{tool} server: $*"; exit 0;; esac
host=${{COBALT_FAKE_DOLPHIN_HOST:-${{SLURMD_NODENAME:-local}}}}
f={data}/{tool}-$host.txt
[ -f "$f" ] || f={data}/{tool}.txt
cat "$f"
"""


@pytest.fixture
def dolphin_fake_tools(tmp_path):
    """A directory of stand-ins for the five tools and the data they print; returns
    (bin dir, data dir)."""
    bindir, data = tmp_path / "fakebin", tmp_path / "fakedata"
    bindir.mkdir()
    data.mkdir()
    for tool in DOLPHIN_TOOLS:
        (data / f"{tool}.txt").write_text(dolphin_recorded(tool))
        path = bindir / tool
        path.write_text(_DOLPHIN_FAKE.format(tool=tool, data=data))
        path.chmod(0o755)
    return bindir, data
