"""Alembic environment: migrations run on a connection the store hands in (``store/migrate.py``),
so no alembic.ini and no URL are needed here."""

from alembic import context

from switchboard.store.models import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `switchboard db upgrade` (switchboard.store.migrate.upgrade)")

context.configure(connection=connection, target_metadata=metadata)
with context.begin_transaction():
    context.run_migrations()
