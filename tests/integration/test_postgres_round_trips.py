"""Work of one statement costs one round trip to PostgreSQL: across a link between zones
every extra trip per claim, heartbeat or end takes throughput away (issue 13)."""

from __future__ import annotations

from urllib.parse import urlsplit

from proxy import Proxy

from tickwheel.storage.postgres.store import PostgresStore


async def test_a_statement_outside_a_transaction_is_one_round_trip(database_url: str) -> None:
    server = urlsplit(database_url)
    with Proxy(server.hostname or "127.0.0.1", server.port or 5432) as proxy:
        base, _, schema = database_url.partition("?search_path=")
        store = PostgresStore(proxy.url_for(base), partitions=4, schema=schema, pool_size=1)
        await store.open()
        try:
            await store.extend_leases({1: 1}, until_ms=0)  # the statement is prepared
            before = proxy.sent
            for _ in range(5):
                await store.extend_leases({1: 1}, until_ms=0)
            # asyncpg's default reset on release (advisory unlock, CLOSE ALL, UNLISTEN,
            # RESET ALL) would make it two.
            assert proxy.sent - before <= 5
        finally:
            await store.close()
