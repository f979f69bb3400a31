"""Hearthside plugin pack: RSS and Atom feeds a persona follows (read-only tools).

It needs plugin API 1.2 (``safe_get`` and the other safe-fetch names). The check runs when the
package is imported, before any module imports those names, so an older Hearthside disables
the pack with this sentence instead of a bare "cannot import name".
"""

from hearthside.plugin import PLUGIN_API_VERSION

__version__ = "0.1.0"

#: The plugin API this pack needs (``MAJOR.MINOR``).
NEEDS_PLUGIN_API = (1, 2)

_major, _minor = (int(n) for n in PLUGIN_API_VERSION.split(".")[:2])
if _major != NEEDS_PLUGIN_API[0] or _minor < NEEDS_PLUGIN_API[1]:
    raise ImportError(f"hearthside-feeds needs plugin API 1.2 or a later 1.x; this Hearthside has "
                      f"{PLUGIN_API_VERSION}")
