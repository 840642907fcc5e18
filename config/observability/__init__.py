"""What the service tells about itself: log formats, Prometheus metrics, the request id of the work
being served, and errors without secrets or rows."""
