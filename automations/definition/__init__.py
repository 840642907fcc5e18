"""The automation definition: its published JSON Schema and the checks beyond it."""
