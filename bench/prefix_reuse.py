"""Prefix reuse on the embedded model: warm vs cold prefill, cached-token share, latencies.

    .venv/bin/python -m bench.prefix_reuse [--questions 200] [--answer-tokens 48] [--repeats 3] [--streamed 5]

Starts a model server of its own on a free port (so no other traffic touches its
KV state) and talks to it through the app's own client, with prompts built by
the app's own ``build_chat_request`` from a realistic tenant block (instructions
and few-shot examples, >= 1,000 static prefix tokens) and passages cut from the
demo knowledge base (``kb/acme/en``; synthetic text when it is missing).

- Cold vs warm prefill: time to first token with ``max_tokens=1``. Before each
  cold request the server is warmed with a prompt that does NOT share the
  prefix, and the cold request's own ``cached_tokens`` proves the miss.
- Cached-token share: a replay of N demo questions (``max_tokens=1``):
  sum(cached tokens, up to the static prefix) / sum(static prefix tokens), where a
  request's static prefix is the token prefix it shares with a probe request
  that has a different passage and question.
- Latency: TTFT and total for a streamed answer after a miss, after a warm
  prefix, and for another tenant's salt on the same text (must be a miss).

Ends with one line:
``cold_prefill_ms=… warm_prefill_ms=… warm_over_cold=… cached_token_share=…``
"""
from __future__ import annotations

import argparse
import os
import random
import re
import signal
import socket
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")

import httpx  # noqa: E402
from django.conf import settings  # noqa: E402

from generation.base import ChatRequest, GenerationResult, Passage  # noqa: E402
from generation.fleet import scrape_prefix_cache_metrics  # noqa: E402
from generation.local_model import EmbeddedBackend, start_model_server, stop_model_server  # noqa: E402
from generation.prompt import TenantPrompt, build_chat_request  # noqa: E402

HOST = "127.0.0.1"
PASSAGE_CHARS = 320
TENANT = "acme"
OTHER_TENANT = "initech"

INSTRUCTIONS = """\
Acme Outfitters is an online retailer of outdoor gear, clothing and electronics with a flagship store \
(the Acme Basecamp Store) in Denver, Colorado. We ship from Denver to the United States and Canada and \
from our Leipzig warehouse to the United Kingdom, Germany and Austria. Acme Plus is our paid membership.

Voice and tone:
- Be friendly, calm and brief. Write like a helpful store associate, not like a lawyer.
- Use the customer's language. Use "you" and "we". Do not use exclamation marks more than once.
- Prefer short sentences. Use a numbered list only for steps the customer has to follow in order.
- Never blame the customer, a carrier or a colleague. Never speculate about why something happened.

Facts and promises:
- Prices are in US dollars unless a passage says otherwise; give prices exactly as written in the passage.
- Never promise refunds, exceptions, discounts, delivery dates or compensation that the passages do not state.
- When a rule differs for Acme Plus members, say so and give both the standard and the Plus rule.
- When a rule differs by country, give the rule for each country the passage mentions.
- Order numbers look like AO-123456 and refund references look like RF-123456. Never invent one.
- Do not ask for or repeat card numbers, passwords or one-time codes. If a customer shares one, tell them \
to change it and that we will never ask for it.

Personal and account questions:
- You cannot see orders, accounts, payments or deliveries. For "where is my order", "my refund", \
"cancel my order" and similar, explain the self-service steps from the passages (Account > Orders) and \
offer the hand-off to a person.
- Never confirm whether an email address or a person has an account with us.

Safety and product use:
- For questions about using stoves, heaters, batteries or climbing equipment safely, answer only from the \
passages and recommend the product manual; never improvise safety advice.
- For medical, legal or tax questions beyond what the passages state, say you cannot advise and offer the \
hand-off.

Hand-off: a person can help through chat at help.acme-outfitters.example/contact or by phone on \
+1 555 0100 (Monday to Friday, 8am to 8pm Eastern Time)."""

FEW_SHOT = (
    ("Do you sell gift cards?",
     "Yes. Digital gift cards from $10 to $500 are sold on our website and never expire [1]."),
    ("Can I pick up my order in a store?",
     "Yes, free in-store pickup is available at the Acme Basecamp Store in Denver; choose it at checkout [1]."),
    ("How long do refunds take to reach my card?",
     "Card refunds arrive 5-7 business days after we issue them, depending on your bank [1]. PayPal refunds take "
     "1-2 business days [1]."),
    ("Can I return a headlamp I already opened?",
     "Yes. Opened electronics can be returned within the normal return window as long as everything that came "
     "in the box is included, and there is no restocking fee [1]."),
    ("Do you deliver to Switzerland?",
     "Not at the moment. We deliver to the USA, Canada, the UK, Germany and Austria only [1]."),
    ("What does Acme Plus cost?",
     "Acme Plus costs $49 a year [1]. It includes free standard shipping on every order and a 60-day return "
     "window [1][2]."),
    ("Can you tell me if my friend has an account?",
     "I'm sorry, I can't share whether someone has an account with us. Your friend can contact our team "
     "directly [1]."),
    ("What is the weather in Denver today?", "NOT_COVERED"),
)

SYNTHETIC_TOPICS = [
    ("Return window", "Unused items can be returned within 30 days of delivery; Plus members get 60 days."),
    ("Refund timing", "Card refunds arrive 5-7 business days after the refund is issued; PayPal takes 1-2 days."),
    ("Shipping countries", "We deliver to the USA, Canada, the United Kingdom, Germany and Austria."),
    ("Express delivery", "Express delivery takes 1-2 business days and costs $14.95; Plus members ship free over $75."),
    ("Warranty", "Most products carry a 2-year warranty against defects; refurbished items carry 12 months."),
]

QUESTION_FORMS = [
    "{q}", "Quick question: {q}", "Hi, {q}", "Hello! {q} Thanks.", "Could you help me? {q}",
    "I ordered last week. {q}", "{q} I couldn't find it on the site.", "Sorry to bother you, {q}",
]


def kb_passages(root: Path) -> list[tuple[str, str, str, str]]:
    """(article id, title, url, text) per '## ' section of the demo articles, text cut to PASSAGE_CHARS."""
    sections = []
    for path in sorted(root.glob("*.md")):
        raw = path.read_text(encoding="utf-8")
        match = re.match(r"^---\n(.*?)\n---\n(.*)$", raw, re.DOTALL)
        if not match:
            continue
        meta = dict(line.split(":", 1) for line in match.group(1).splitlines() if ":" in line)
        meta = {k.strip(): v.strip() for k, v in meta.items()}
        for block in re.split(r"\n(?=## )", match.group(2)):
            heading, _, body = block.partition("\n")
            body = re.sub(r"\s+", " ", body.replace("**", "")).strip()
            if heading.startswith("## ") and len(body) > 80:
                title = f"{meta.get('title', path.stem)}: {heading[3:].strip()}"
                sections.append((meta.get("id", path.stem), title, meta.get("url", ""), _cut(body)))
    return sections


def _cut(text: str) -> str:
    if len(text) <= PASSAGE_CHARS:
        return text
    cut = text[:PASSAGE_CHARS]
    return cut[: cut.rfind(" ")] + " …"


def demo_items(count: int, rng: random.Random) -> list[tuple[Passage, str]]:
    root = Path(settings.KB_DEMO_DIR) / TENANT / "en"
    sections = kb_passages(root) if root.is_dir() else []
    if not sections:
        sections = [(f"synthetic-{i}", title, f"https://help.example/{i}", text)
                    for i, (title, text) in enumerate(SYNTHETIC_TOPICS)]
    items = []
    for i in range(count):
        article_id, title, url, text = sections[i % len(sections)]
        topic = title.split(":", 1)[-1].strip().rstrip("?").lower()
        question = rng.choice(QUESTION_FORMS).format(q=f"what should I know about {topic}?")
        passage = Passage(number=1, chunk_id=i, article_id=article_id, title=title, url=url, version=1,
                          text=text, similarity=0.7)
        items.append((passage, question))
    rng.shuffle(items)
    return items


def tenant_prompt() -> TenantPrompt:
    return TenantPrompt(name="Acme Outfitters", instructions=INSTRUCTIONS, few_shot=FEW_SHOT)


def with_tokens(request: ChatRequest, max_tokens: int, salt: str | None = None) -> ChatRequest:
    return ChatRequest(messages=request.messages, params={**request.params, "max_tokens": max_tokens},
                       cache_salt=salt or request.cache_salt)


def streamed(backend: EmbeddedBackend, request: ChatRequest) -> GenerationResult:
    result = None
    for item in backend.stream(request):
        if isinstance(item, GenerationResult):
            result = item
    assert result is not None
    return result


def prefill_ms(result: GenerationResult) -> float:
    # With max_tokens=1 the first token is the only one; an immediate end-of-turn has no delta.
    return result.ttft_ms if result.ttft_ms is not None else result.total_ms


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.prefix_reuse")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--answer-tokens", type=int, default=48, help="max_tokens of the streamed answers")
    parser.add_argument("--repeats", type=int, default=3, help="cold/warm pairs measured")
    parser.add_argument("--streamed", type=int, default=5,
                        help="warm-prefix streamed answers measured (and up to 2 after a miss); 0 skips that part "
                             "(a smoke run: each miss is a cold prefill, a minute on a busy machine)")
    args = parser.parse_args(argv)
    if min(args.questions, args.repeats, args.streamed) < 0 or not (args.questions and args.repeats):
        parser.error("--questions and --repeats take N >= 1, --streamed N >= 0")
    sys.stdout.reconfigure(line_buffering=True)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # still stop our server
    rng = random.Random(20261129)

    with socket.socket() as s:
        s.bind((HOST, 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    proc = start_model_server(HOST, port)
    print(f"model server: http://{HOST}:{port} (pid {proc.pid}, started in {time.monotonic() - t0:.1f}s, "
          f"n_ctx={settings.EMBEDDED_MODEL_CTX}, threads={settings.EMBEDDED_MODEL_THREADS})")
    backend = EmbeddedBackend(host=HOST, port=port, autostart=False, connect_timeout_s=5, timeout_s=600,
                              max_retries=0, breaker_failures=1000, breaker_reset_s=1)
    http = httpx.Client(base_url=f"http://{HOST}:{port}", timeout=60)

    def tokens(request: ChatRequest) -> list[int]:
        return http.post("/tokenize", json={"messages": request.messages}).json()["tokens"]

    try:
        tenant = tenant_prompt()
        items = demo_items(args.questions + 16, rng)
        replay, spare = items[: args.questions], items[args.questions:]
        probe = build_chat_request(TENANT, tenant, [Passage(1, -1, "probe", "Probe", "u", 1,
                                                            "Zebra crossings are painted white.", 0.1)],
                                   "Which colour are zebra crossings?")
        probe_tokens = tokens(probe)
        unrelated = ChatRequest(messages=[{"role": "user", "content": "Write two lines about the sea at night."}],
                                params={"max_tokens": 1, "temperature": 0.0, "seed": 7},
                                cache_salt=build_chat_request(TENANT, tenant, [], "x").cache_salt)

        def build(index: int, pool=spare) -> ChatRequest:
            passage, question = pool[index % len(pool)]
            return build_chat_request(TENANT, tenant, [passage], question)

        static = common_prefix(tokens(build(0)), probe_tokens)
        print(f"static prefix: {static} tokens (system prompt, tenant instructions, {len(FEW_SHOT)} few-shot "
              f"examples); a request is ~{len(tokens(build(0)))} tokens")
        if static < 1000:
            print("WARNING: the static prefix is shorter than 1,000 tokens", file=sys.stderr)

        # ------------------------------------------------------------ cold vs warm prefill
        cold, warm, cold_cached, warm_cached = [], [], [], []
        for i in range(args.repeats):
            backend.complete(unrelated)  # the KV state now holds a prompt that shares nothing useful
            miss = streamed(backend, with_tokens(build(2 * i), 1))
            hit = streamed(backend, with_tokens(build(2 * i + 1), 1))
            cold.append(prefill_ms(miss)); cold_cached.append(miss.cached_tokens or 0)
            warm.append(prefill_ms(hit)); warm_cached.append(hit.cached_tokens or 0)
            print(f"  pair {i + 1}: cold {cold[-1]:7.0f} ms (cached {cold_cached[-1]:4d} of {miss.prompt_tokens})"
                  f"   warm {warm[-1]:6.0f} ms (cached {warm_cached[-1]:4d} of {hit.prompt_tokens})")
        cold_ms, warm_ms = statistics.median(cold), statistics.median(warm)
        real_miss = max(cold_cached) <= 0.02 * static
        print(f"prefill (TTFT, max_tokens=1): cold {cold_ms:.0f} ms, warm {warm_ms:.0f} ms, "
              f"warm/cold {warm_ms / cold_ms:.3f}; cold requests reused at most {max(cold_cached)} tokens "
              f"({'a real miss' if real_miss else 'NOT a clean miss'})")

        # ------------------------------------------------------------ another tenant, same text
        same_text = with_tokens(build(1), 1)
        streamed(backend, same_text)  # make sure acme's state holds exactly this prompt
        foreign = streamed(backend, with_tokens(same_text, 1, salt=build_chat_request(
            OTHER_TENANT, tenant, [], "x").cache_salt))
        print(f"other tenant's salt, identical prompt: cached {foreign.cached_tokens} tokens, "
              f"prefill {prefill_ms(foreign):.0f} ms (isolated: no reuse across tenants)")

        # ------------------------------------------------------------ streamed answers
        miss_ttft, miss_total = [], []
        for i in range(min(2, args.streamed)):
            backend.complete(unrelated)
            result = streamed(backend, with_tokens(build(8 + i), args.answer_tokens))
            miss_ttft.append(prefill_ms(result)); miss_total.append(result.total_ms)
        warm_ttft, warm_total, warm_tokens = [], [], []
        if args.streamed:
            streamed(backend, with_tokens(build(10), 1))
        for i in range(args.streamed):
            result = streamed(backend, with_tokens(build(11 + i), args.answer_tokens))
            warm_ttft.append(prefill_ms(result)); warm_total.append(result.total_ms)
            warm_tokens.append(result.completion_tokens)
        if args.streamed:
            print(f"streamed answers (max_tokens={args.answer_tokens}): "
                  f"miss TTFT p50 {statistics.median(miss_ttft):.0f} ms, total p50 {statistics.median(miss_total):.0f} ms; "
                  f"warm-prefix TTFT p50 {statistics.median(warm_ttft):.0f} ms, total p50 "
                  f"{statistics.median(warm_total):.0f} ms ({statistics.mean(warm_tokens):.0f} tokens on average)")

        # ------------------------------------------------------------ replay
        before = scrape_prefix_cache_metrics(f"http://{HOST}:{port}")
        started = time.monotonic()
        sum_static = sum_cached_static = sum_cached = sum_prompt = 0
        totals = []
        for i, (passage, question) in enumerate(replay):
            request = with_tokens(build_chat_request(TENANT, tenant, [passage], question), 1)
            static_i = common_prefix(tokens(request), probe_tokens)
            result = backend.complete(request)
            cached = result.cached_tokens or 0
            sum_static += static_i
            sum_cached_static += min(cached, static_i)
            sum_cached += cached
            sum_prompt += result.prompt_tokens
            totals.append(result.total_ms)
            if (i + 1) % 50 == 0:
                print(f"  replayed {i + 1}/{len(replay)} ({time.monotonic() - started:.0f}s)")
        after = scrape_prefix_cache_metrics(f"http://{HOST}:{port}")
        share = sum_cached_static / sum_static
        server_hits = after.prefix_cache_hits - before.prefix_cache_hits
        server_queries = after.prefix_cache_queries - before.prefix_cache_queries
        print(f"replay of {len(replay)} demo questions (max_tokens=1): static prefix tokens {sum_static}, "
              f"served from cache {sum_cached_static} -> share {share:.3f}; all cached/static {sum_cached / sum_static:.3f}; "
              f"cached/prompt {sum_cached / sum_prompt:.3f}")
        print(f"  server /metrics over the replay: vllm:prefix_cache_hits_total +{server_hits:.0f} / "
              f"vllm:prefix_cache_queries_total +{server_queries:.0f} = {server_hits / server_queries:.3f}; "
              f"kv_cache_usage_perc {after.kv_cache_usage_perc if after.kv_cache_usage_perc is not None else float('nan'):.3f}")
        print(f"  per-request latency (prefill of the dynamic part + 1 token): p50 {pct(totals, 0.5):.0f} ms, "
              f"p95 {pct(totals, 0.95):.0f} ms")
        print(f"bench time {time.monotonic() - t0:.0f}s")
        print(f"cold_prefill_ms={cold_ms:.0f} warm_prefill_ms={warm_ms:.0f} "
              f"warm_over_cold={warm_ms / cold_ms:.3f} cached_token_share={share:.3f}")
    finally:
        http.close()
        backend.close()
        stop_model_server(proc.pid, proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
