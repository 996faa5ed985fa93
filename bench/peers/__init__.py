"""The systems `tickwheel bench compare` measures: Tickwheel in either mode, and its
peers. Each is imported only when asked for, since each peer needs the optional extra
`pip install -e '.[bench]'`."""

from __future__ import annotations

from importlib import import_module

from bench.peers.base import Peer
from bench.stores import Mode

# Tickwheel's two modes, by the name each goes by in the comparison
TICKWHEEL = {Mode.DISTRIBUTED: "tickwheel-distributed", Mode.EMBEDDED: "tickwheel-embedded"}

# name -> "module:factory" of its `Peer`
FACTORIES = {
    TICKWHEEL[Mode.DISTRIBUTED]: "bench.peers.tickwheel_peer:distributed",
    TICKWHEEL[Mode.EMBEDDED]: "bench.peers.tickwheel_peer:embedded",
    "celery": "bench.peers.celery_peer:peer",
    "rq": "bench.peers.rq_peer:peer",
    "dramatiq": "bench.peers.dramatiq_peer:peer",
    "arq": "bench.peers.arq_peer:peer",
    "procrastinate": "bench.peers.procrastinate_peer:peer",
    "huey": "bench.peers.huey_peer:peer",
    "saq": "bench.peers.saq_peer:peer",
}

# the other systems, Tickwheel's peers
PEERS = [name for name in FACTORIES if name not in TICKWHEEL.values()]


def load(name: str) -> Peer:
    """The named system; ImportError says which extra to install when its library is
    absent."""
    module, factory = FACTORIES[name].split(":")
    peer: Peer = getattr(import_module(module), factory)()
    return peer
