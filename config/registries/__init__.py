"""Registries that a lower family offers and higher families fill by dotted path (hooks, the
system-event outbox, agent tools, metrics and dashboard sections), so neither imports the other at
start-up."""
