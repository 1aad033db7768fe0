"""``serving.StreamDeadline``: a stream's maximum duration as one timer for its whole life, ending
the wait under way (or the next one) with ``TimeoutError`` and leaving a caller's own cancel alone."""
from __future__ import annotations

import asyncio

import pytest

from supportbot.serving import StreamDeadline


async def slow_items(gap_s: float, n: int = 100, closed: list | None = None):
    try:
        for i in range(n):
            await asyncio.sleep(gap_s)
            yield i
    finally:
        if closed is not None:
            closed.append(True)


def test_items_before_the_deadline_come_through_and_the_timer_is_dropped():
    async def run():
        loop = asyncio.get_running_loop()
        async with StreamDeadline(loop.time() + 5) as limit:
            items = [await limit.next(slow_items(0.0, 3)) for _ in range(1)]
            got = []
            source = slow_items(0.001, 3)
            while True:
                try:
                    got.append(await limit.next(source))
                except StopAsyncIteration:
                    break
        return items, got, limit._timer.cancelled()

    assert asyncio.run(run()) == ([0], [0, 1, 2], True)


def test_a_wait_past_the_deadline_ends_with_a_timeout_and_closes_nothing_else():
    async def run():
        loop = asyncio.get_running_loop()
        closed: list = []
        source = slow_items(0.2, closed=closed)
        started = loop.time()
        async with StreamDeadline(started + 0.5) as limit:
            got = []
            with pytest.raises(TimeoutError):
                while True:
                    got.append(await limit.next(source))
        await source.aclose()
        task = asyncio.current_task()
        return got, loop.time() - started, task.cancelling(), closed

    got, took, cancelling, closed = asyncio.run(run())
    assert got == [0, 1] and 0.45 <= took < 0.6  # cut inside the third wait, not after it
    assert cancelling == 0 and closed == [True]  # the task is not left cancelled


def test_a_deadline_passed_between_two_items_ends_the_next_wait_at_once():
    async def run():
        loop = asyncio.get_running_loop()
        async with StreamDeadline(loop.time() + 0.05) as limit:
            source = slow_items(0.0)
            first = await limit.next(source)
            await asyncio.sleep(0.1)  # the consumer is busy writing when the deadline passes
            with pytest.raises(TimeoutError):
                await limit.next(source)
        return first

    assert asyncio.run(run()) == 0


def test_a_callers_own_cancel_stays_a_cancel():
    async def consume(started: asyncio.Event):
        loop = asyncio.get_running_loop()
        async with StreamDeadline(loop.time() + 5) as limit:
            source = slow_items(1.0)
            started.set()
            await limit.next(source)

    async def run():
        started = asyncio.Event()
        task = asyncio.create_task(consume(started))
        await started.wait()
        task.cancel()  # the customer left
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
