"""Adapters implement core's seams with real libraries; one adapter per library."""
