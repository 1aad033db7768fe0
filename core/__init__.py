"""The bottom layer: tenants, their API keys and staff, and the plumbing every app shares (the Redis
client, job locks and runs, the per-process cache, metrics, the retry policy). It imports no app."""
