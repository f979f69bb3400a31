"""The plugin host: pluggy hook specs, isolated loading of packs, the block list, the installer."""
