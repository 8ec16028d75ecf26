"""`run_consensus`: free-text answers, the winner presents the final answer; its record is
the run's own (`runs/store.py`), so this mode has no store of its own."""
