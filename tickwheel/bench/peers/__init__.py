"""The peers `tickwheel bench compare` measures beside Tickwheel. Each is imported only
when asked for, since each needs the optional extra `pip install -e .[bench]`."""

from __future__ import annotations

from importlib import import_module

from tickwheel.bench.peers.base import Peer

# name -> module holding `peer()`, the factory of its `Peer`
MODULES = {
    "celery": "tickwheel.bench.peers.celery_peer",
    "rq": "tickwheel.bench.peers.rq_peer",
    "dramatiq": "tickwheel.bench.peers.dramatiq_peer",
    "arq": "tickwheel.bench.peers.arq_peer",
    "procrastinate": "tickwheel.bench.peers.procrastinate_peer",
    "huey": "tickwheel.bench.peers.huey_peer",
}


def load(name: str) -> Peer:
    """The named peer; ImportError says which extra to install when its library is absent."""
    module = import_module(MODULES[name])
    peer: Peer = module.peer()
    return peer
