"""A customer introducing themselves ("this is Jane") is not pointing back at a conversation."""
import pytest

from supportbot.conversation import Conversation, resolve


@pytest.mark.parametrize("message", [
    "Hello, this is Jane Quimbyfrost from 12 Baker Street, how long does shipping to Canada take?",
    "Hi, this is Tom. Do you ship to Mexico?",
])
def test_an_introduction_is_standalone(message):
    r = resolve(Conversation.single(message), "en")
    assert r.how != "clarify", r.detail


@pytest.mark.parametrize("message", ["Is this free?", "How long does this take?"])
def test_this_alone_still_needs_context(message):
    assert resolve(Conversation.single(message), "en").how == "clarify"
