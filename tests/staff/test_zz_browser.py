"""A real browser (Playwright driving Debian's Chromium) against the live server: a customer asks
on the chat page and says "no" to a cached answer; a support agent logs into the admin, labels
the sampled hit with the keyboard and confirms it wrong in the review queue.

Named to run last in this folder: ``site`` (the async server, ``asgi_live_server``) flushes
the database afterwards, and the fixtures of later tests reload the demo knowledge base."""
from pathlib import Path

import pytest

from caching.models import Feedback, Label, ReviewItem, SampledHit, SemanticEntry
from supportbot import pipeline
from tests.caching.helpers import offer
from tests.staff.conftest import PASSWORD

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
QUESTION = "How do I return an item?"
ANSWER = "Unused items can be returned within 30 days of delivery for a full refund [1]."

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing: run BOOTSTRAP_BROWSER=1 "
                                                           "bash scripts/bootstrap.sh to install Chromium"),
]


@pytest.fixture
def site(asgi_live_server):
    """The browser talks to the async server (ASGI under uvicorn), as ``make run`` serves. Not named
    ``live_server``: pytest-django's own helper would treat it as its WSGI live server."""
    return asgi_live_server


@pytest.fixture
def browser_page(monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the ORM calls between browser
    # steps are plain synchronous code (the live server answers from its own thread).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.set_default_timeout(30_000)
        try:
            yield page
        finally:
            browser.close()


def test_customer_says_no_and_an_agent_labels_and_quarantines(site, acme, agent, sample_everything,
                                                              browser_page):
    page = browser_page
    offered = offer(pipeline.Asker(acme, "en", None), QUESTION, ANSWER)
    assert offered.admitted

    # the customer asks; the answer comes from the exact cache, streamed over SSE
    page.goto(f"{site.url}/t/{acme.slug}/")
    page.fill("#question", QUESTION)
    page.click("form.ask-form button[type=submit]")
    footer = page.locator(".answer-footer").first
    footer.get_by_text("Did this answer your question?").wait_for()
    assert "from saved answers (exact)" in footer.inner_text()
    assert "30 days" in page.locator(".answer-text").first.inner_text()
    footer.get_by_role("button", name="No").click()
    footer.get_by_text("Thanks for telling us").wait_for()

    item = ReviewItem.objects.get()
    assert (item.source, item.layer, item.status) == ("feedback", "exact", "open")
    assert Feedback.objects.get(ask=item.ask).helpful is False
    sample = SampledHit.objects.get(decision=item.decision)

    # the agent logs in and labels with the keyboard: w, then 1 (entity)
    page.goto(f"{site.url}/admin/login/?next=/admin/ask/label/")
    page.fill("#id_username", agent.username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/ask/label/")
    card = page.locator("#label-card")
    assert card.get_attribute("data-sample") == str(sample.pk)
    assert QUESTION in card.inner_text()
    page.keyboard.press("w")
    page.keyboard.press("1")
    page.locator(".label-empty").wait_for()  # the next card (none left) replaced it without a reload
    assert "1 labelled by you today" in page.locator("#label-card").inner_text()
    label = Label.objects.get(decision=item.decision)
    assert (label.verdict, label.reason, label.labeler_id) == ("wrong", "entity", agent.pk)

    # in the review queue, confirm wrong: the entry leaves every cache at once
    page.goto(f"{site.url}/admin/ask/queue/")
    review_card = page.locator(f"#review-{item.pk}")
    assert QUESTION in review_card.inner_text() and "30 days" in review_card.inner_text()
    review_card.locator("select[name=reason]").select_option("entity")
    review_card.get_by_role("button", name="Confirm wrong (quarantine)").click()
    page.locator(f'#review-{item.pk}[data-status="confirmed_wrong"]').wait_for()
    assert SemanticEntry.objects.get(question=QUESTION, tenant=acme).status == "quarantined"
    assert not pipeline.exact_layer.lookup(offered.key, acme.pk).hit


def test_a_first_question_gets_a_cited_answer_quoted_from_the_help_centre(site, acme, browser_page, settings):
    """The default install (no VLLM_BASE_URL): the extractive answerer quotes the article that
    says Acme delivers to Canada, cites it, and the page says where the answer comes from."""
    settings.VLLM_BASE_URL, settings.ASK_ANSWERER = "", ""
    page = browser_page
    page.goto(f"{site.url}/t/{acme.slug}/")
    page.fill("#question", "Do you ship to Canada?")
    page.click("form.ask-form button[type=submit]")
    footer = page.locator(".answer-footer").first
    footer.get_by_text("Did this answer your question?").wait_for()

    answer = page.locator(".answer-text").first.inner_text()
    assert "Canada" in answer and "not ship to Canada" not in answer and "[1]" in answer
    assert "From the help centre" in footer.inner_text() and "Answered by" not in footer.inner_text()
    assert "Countries we ship to" in footer.locator("ol.citations").inner_text()
