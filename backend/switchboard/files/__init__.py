"""Uploads and artifacts: their bytes in a file store (a folder or object storage), their
metadata beside them, upload quotas, and the signed URLs MCP servers fetch them by."""
