"""What the code reads from where it runs: the one clock, the secrets key ring, and the Redis
clients on the cache's and the broker's servers."""
