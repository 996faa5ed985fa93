"""The operators' dashboard: static files served by the API at `/`, no build step.

The page reads the same HTTP API as every client (with the same tokens and scopes) and
stays live through one Server-Sent Events stream, `/api/stream`.
"""
