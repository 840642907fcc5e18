"""Writes of the automations family: definitions and their versions, the lifecycle, and
run cancellation."""
