"""Executors: what runs a scoring pass's trials (threads, processes, a cluster, Harbor,
Inspect), chosen by ``[executor] kind`` (:data:`gsme.registry.EXECUTORS`)."""

from gsme.executors.base import Done, Executor, Snapshot

__all__ = ["Done", "Executor", "Snapshot"]
