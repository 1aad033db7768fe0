"""A Redis client per thread, retired all at once by a reset."""
import threading

from supportbot.redis_client import get_redis, reset_redis_state


def test_each_thread_has_its_own_client_and_a_reset_retires_them_all():
    mine = get_redis()
    assert get_redis() is mine and mine.ping()
    seen = []
    worker = threading.Thread(target=lambda: seen.append(get_redis()))
    worker.start()
    worker.join()
    assert seen[0] is not mine and seen[0].connection is not mine.connection
    reset_redis_state()
    fresh = get_redis()
    assert fresh is not mine and fresh.ping()
    assert mine.connection is None  # closed by the reset
