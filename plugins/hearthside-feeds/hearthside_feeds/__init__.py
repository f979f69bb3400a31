"""Hearthside plugin pack: RSS and Atom feeds a persona follows (read-only tools)."""

from hearthside.plugin import PLUGIN_API_VERSION

__version__ = "0.1.0"

# Plugin API 1.2 (safe_get), checked before any module imports it: an older Hearthside then
# disables the pack with this sentence, not a bare "cannot import name" (docs/packs.md).
_major, _minor = (int(n) for n in PLUGIN_API_VERSION.split(".")[:2])
if _major != 1 or _minor < 2:
    raise ImportError(f"hearthside-feeds needs plugin API 1.2 or a later 1.x; this "
                      f"Hearthside has {PLUGIN_API_VERSION}")
