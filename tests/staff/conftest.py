"""Staff-page fixtures: users in the two roles, and cache hits made through the real layers."""
import pytest
from django.contrib.auth.models import Group, User

from caching.models import CacheDecision
from caching.roles import CACHE_ADMINS, SUPPORT_AGENTS, roles_setup
from supportbot import pipeline
from supportbot.models import AskEvent
from tests.caching.helpers import cached_lookup, offer

PASSWORD = "a-long-test-password-42"


def _user(username: str, group: str | None, *, staff: bool = True) -> User:
    roles_setup()
    user = User.objects.create_user(username, password=PASSWORD, is_staff=staff)
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


@pytest.fixture
def agent(db):
    return _user("agent", SUPPORT_AGENTS)


@pytest.fixture
def cache_admin(db):
    return _user("cacheadmin", CACHE_ADMINS)


@pytest.fixture
def bare_staff(db):
    return _user("barestaff", None)


@pytest.fixture
def sample_everything(settings):
    """Every hit is sampled (the rate is the only rule)."""
    settings.SAMPLE_RATES = {"exact": 1.0, "semantic": 1.0, "shadow": 1.0}
    settings.SAMPLE_MIN_PER_INTENT_DAY = 0


@pytest.fixture
def sample_nothing(settings):
    settings.SAMPLE_RATES = {"exact": 0.0, "semantic": 0.0, "shadow": 0.0}
    settings.SAMPLE_MIN_PER_INTENT_DAY = 0


def served_hit(tenant, cached_question: str, new_question: str, *, locale: str = "en",
               answer: str | None = None) -> tuple[AskEvent, CacheDecision, pipeline.AskState]:
    """Admit an answer to ``cached_question`` through the normal admission (exact + semantic
    stores), then ask ``new_question`` through the lookup path and return its recorded Ask and
    the decision of the layer that served it."""
    asker = pipeline.Asker(tenant, locale, None)
    offered = offer(asker, cached_question, answer)
    assert offered.admitted, [(d.layer, d.disposition, d.reason) for d in offered.layers]
    state, served = cached_lookup(asker, new_question)
    assert served is not None, [(d.layer, d.disposition, d.reason) for d in state.layers]
    ask = AskEvent.objects.get(request_id=state.request_id)
    return ask, ask.decisions.get(layer=ask.serving_layer, disposition="hit"), offered
