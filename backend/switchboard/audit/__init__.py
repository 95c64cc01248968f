"""The audit log (docs/audit.md): every security-relevant fact as one record in an
append-only hash chain with signed checkpoints. `chain.py` is the pure arithmetic, `keys.py` the
signing key, `writer.py` the app's `record(kind, ...)`, `verify.py` and `export.py` the readers,
`cli.py` the `switchboard audit` commands; the one writer in the database is
`store/governance/audit_log.py` (only store/ speaks SQL)."""
