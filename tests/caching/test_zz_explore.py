import time
import pytest
from supportbot import pipeline
from tests.caching.helpers import offer, cached_lookup

def test_explore(acme):
    a = pipeline.Asker(acme, "en")
    t = time.perf_counter()
    s = offer(a, "How many days do I have to return an item?")
    print("offer", time.perf_counter() - t, s.admitted, [(d.layer, d.disposition, d.reason) for d in s.layers])
    for q in ["How many days do I have to return an item?", "how long do i have to return an item",
              "Where is order AO-123456?", "Can I return an opened item?", "How do I return something?"]:
        t = time.perf_counter()
        st, served = cached_lookup(a, q)
        print(q, round(time.perf_counter() - t, 3), served is not None, [(d.layer, d.disposition, d.reason, d.similarity) for d in st.layers])
