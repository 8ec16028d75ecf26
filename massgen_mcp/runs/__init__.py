"""Runs: their records on disk (`store`), execution (`engine`), and progress text."""
