"""Runs shared by many processes: the Redis store (`redis_store.py`, one record per run in
`redis_record.py`), the job queue (`queue.py`, saq), the front end that hands a run to a
worker and follows it (`dispatch.py`), and the worker that executes it (`worker.py`).
Nothing here is imported unless `--store redis://...` is given."""
