"""What the code reads from where it runs: the one clock, the secrets key ring, and the Redis client
on the cache's server."""
