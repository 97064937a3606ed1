"""Micro-batching of concurrent requests for in-process engines (hf, vllm, `harness serve`).

Concurrent episodes each `await queue.submit(item)`; one worker per event loop gathers up to
`max_batch` pending items (waiting at most `wait_s` for more after the first), runs the
blocking `run_batch(items) -> results` on a single worker thread (so the event loop stays
free and the engine is never called from two threads at once) and resolves each caller's
future with its own result, or with the batch's exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

__all__ = ["BatchQueue"]


class BatchQueue(Generic[Item, Result]):
    """Collects items from concurrent callers into batches for `run_batch`."""

    def __init__(self, run_batch: Callable[[Sequence[Item]], Sequence[Result]], *,
                 max_batch: int = 16, wait_s: float = 0.002, name: str = "engine"):
        self.run_batch = run_batch
        self.max_batch = max_batch
        self.wait_s = wait_s
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._pending: list[tuple[Item, asyncio.Future]] = []
        self._worker: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.batches: list[int] = []
        """Size of every batch run so far (for tests and stats)."""

    async def submit(self, item: Item) -> Result:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop (e.g. a second asyncio.run)
            self._loop, self._worker, self._pending = loop, None, []
        future: asyncio.Future = loop.create_future()
        self._pending.append((item, future))
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            if len(self._pending) < self.max_batch and self.wait_s > 0:
                await asyncio.sleep(self.wait_s)
            batch, self._pending = (self._pending[:self.max_batch],
                                    self._pending[self.max_batch:])
            live = [(item, future) for item, future in batch if not future.done()]
            if not live:
                continue
            self.batches.append(len(live))
            try:
                results: Any = await loop.run_in_executor(
                    self._executor, self.run_batch, [item for item, _ in live])
            except Exception as exc:  # noqa: BLE001 - handed to every caller of the batch
                for _, future in live:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), result in zip(live, results):
                if not future.done():
                    future.set_result(result)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
