"""Staff-page fixtures: users in the two roles, and cache hits made through the real layers."""
import pytest
from django.contrib.auth.models import Group, Permission, User

from caching.models import AskEvent, CacheDecision
from caching.roles import CACHE_ADMINS, SUPPORT_AGENTS, roles_setup
from core.models import StaffMembership, Tenant
from supportbot import pipeline
from tests.caching.helpers import cached_lookup, offer

PASSWORD = "a-long-test-password-42"


def _user(username: str, group: str | None, *, staff: bool = True, tenants=None, all_tenants: bool = False) -> User:
    """A user in ``group``, a member of ``tenants`` (default: every tenant that exists now), or of
    every tenant at all with ``all_tenants`` (core.tenancy)."""
    roles_setup()
    user = User.objects.create_user(username, password=PASSWORD, is_staff=staff)
    if group:
        user.groups.add(Group.objects.get(name=group))
    if all_tenants:
        user.user_permissions.add(Permission.objects.get(content_type__app_label="core",
                                                         codename="view_all_tenants"))
    for tenant in (Tenant.objects.all() if tenants is None else tenants):
        StaffMembership.objects.create(user=user, tenant=tenant)
    return user


@pytest.fixture
def agent(db):
    return _user("agent", SUPPORT_AGENTS)


@pytest.fixture
def cache_admin(db):
    """Thresholds apply to every tenant: the cache admin of these tests is platform staff."""
    return _user("cacheadmin", CACHE_ADMINS, all_tenants=True)


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
