"""The service's network edges: the check every user-given URL passes, the HTTP client pinned to
checked addresses, and the front server that reads request bodies first."""
