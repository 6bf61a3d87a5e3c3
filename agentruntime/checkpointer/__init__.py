"""The chat's LangGraph checkpointer: checkpoints in our own database, through Django (saver), every query it makes
(queries), the history of its DeltaChannels (history) and the worker threads of its async methods (workers)."""
