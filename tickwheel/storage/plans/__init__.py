"""The rules of the stores' writes, each written once, free of I/O, as a plan.

A plan (`steps.Plan`) yields the statements it needs as data and is sent their
answers; the SQLite store runs plans synchronously on its writer's thread and the
PostgreSQL store asynchronously on asyncpg, each answering the steps with its own SQL.
The rules are unit-tested without a database (tests/unit/storage/).
"""
