"""A Redis client per thread, retired all at once by a reset."""
import threading

from core.redis_client import get_redis, reset_redis_state


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


def test_a_call_that_fails_midway_never_leaves_its_reply_for_the_next_one(settings):
    """``call`` skips the client's retry wrapper: an error reply leaves the connection in step,
    and a timeout drops it, so the late reply can never answer the next command."""
    import pytest
    import redis

    from core.redis_client import call

    settings.REDIS_SOCKET_TIMEOUT_S = 0.3
    reset_redis_state()  # clients made under the short timeout
    try:
        call("SET", "call:test", "value")
        with pytest.raises(redis.ResponseError):
            call("INCR", "call:test")  # not an integer: an error reply
        assert call("GET", "call:test") == b"value"
        with pytest.raises(redis.TimeoutError):
            call("BLPOP", "call:empty-list", 1)  # blocks past the socket timeout; its nil reply comes later
        assert get_redis().connection._sock is None  # dropped
        assert call("GET", "call:test") == b"value"  # a new connection, not the BLPOP's late nil
    finally:
        reset_redis_state()


def test_a_connection_the_server_closed_is_replaced_without_an_error():
    """A restarted server or a proxy's idle timeout closes the thread's connection: the next
    ``call`` goes through on a new one, as the client's own retry did."""
    import redis

    from core.redis_client import call

    mine = call("CLIENT", "ID")
    conn = get_redis().connection
    other = redis.Redis(host=conn.host, port=conn.port, db=conn.db)
    try:
        assert other.execute_command("CLIENT", "KILL", "ID", mine) == 1
    finally:
        other.close()
    assert call("PING") == b"PONG"
    assert call("CLIENT", "ID") != mine  # a new connection
