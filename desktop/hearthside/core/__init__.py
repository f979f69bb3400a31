"""Pure rules of Hearthside: no Qt, no adapter library, I/O only through narrow seams.

Everything the contracts pin (soul validation, persona composition, the injection scan,
prompt fencing) lives here so a test of a rule is a function call, not a window.
"""
