"""Rows in bulk and fast: unnest and COPY writes, the server-binding cursor, instances without
Model.__init__, updates of changed fields, and the garbage collector held off during a batch."""
