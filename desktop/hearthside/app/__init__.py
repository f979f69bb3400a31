"""The composition root: reads settings, builds adapters, wires them into core, exposes services."""
