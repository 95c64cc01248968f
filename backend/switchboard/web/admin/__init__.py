"""Administrators' routes (`/api/admin/...`): the host (reload, restart a server), the audit log,
the console's servers and users, and the review of tools."""
