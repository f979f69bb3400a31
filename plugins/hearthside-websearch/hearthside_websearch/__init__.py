"""Hearthside plugin pack: web search through Brave Search or Tavily, and reading a web page."""

__version__ = "0.1.0"
