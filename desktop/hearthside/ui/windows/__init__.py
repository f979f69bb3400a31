"""One module per window: welcome, review, chat, notifications, plugins, mcp, memory, settings."""
