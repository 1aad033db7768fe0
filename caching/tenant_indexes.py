"""One HNSW index per tenant whose semantic cache is large; every other tenant is read through the
(tenant, locale, status) B-tree and sorted exactly.

Why (``bench.semantic_scale``, 1,000,000 entries over 1,000 tenants, ``docs/architecture.md``): a filtered
search of one graph of every tenant's entries walks far for a tenant that is a few percent of the table
(medium tenants: p50 17.8 ms, recall@1 0.87), because the graph's nearest neighbours mostly belong to other
tenants. A partial HNSW index per large tenant (``WHERE status = 'active' AND tenant_id = <id>``) searches
that tenant's entries only: p50 ~2.5 ms for large, medium and small tenants, exact results below the
threshold, and a smaller total index (the tail is in no graph).

``maintain`` makes the indexes match the active-entry counts:

- a tenant with at least ``SEMANTIC_TENANT_INDEX_MIN_ROWS`` active entries gets ``semantic_entry_hnsw_t<id>``;
- an index whose tenant fell below half of that is dropped (the gap keeps a tenant near the threshold from
  being rebuilt every run);
- an invalid index (a concurrent build that died half-way) is dropped and built again.

Outside a transaction (the hourly task, the command, the migration) indexes are built and dropped
``CONCURRENTLY``: lookups and stores never wait for a build. Lookups send the tenant as a literal (Django's
client-side parameter binding), which is what lets the planner prove a partial index's predicate.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection
from django.db.models import Count, Q
from pgvector.django import HnswIndex

from caching.models import SemanticEntry
from core.jobs import job_run

PREFIX = "semantic_entry_hnsw_t"
_NAME = re.compile(rf"^{PREFIX}(\d+)$")


def tenant_index(tenant_id: int, *, name: str | None = None) -> HnswIndex:
    """The tenant's index: the parameters the global index had (m=16, ef_construction=64, cosine)."""
    return HnswIndex(name=name or f"{PREFIX}{int(tenant_id)}", fields=["embedding"], m=16, ef_construction=64,
                     opclasses=["vector_cosine_ops"], condition=Q(status="active", tenant_id=int(tenant_id)))


@dataclass
class Maintenance:
    min_rows: int
    created: list[int] = field(default_factory=list)
    rebuilt: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)
    counts: dict[int, int] = field(default_factory=dict)

    def as_detail(self) -> dict:
        return {"min_rows": self.min_rows, "created": self.created, "rebuilt": self.rebuilt,
                "dropped": self.dropped, "kept": len(self.kept), "tenants_with_entries": len(self.counts)}


def _model(model=None):
    return SemanticEntry if model is None else model


def active_counts(model=None) -> dict[int, int]:
    model = _model(model)
    rows = model.objects.filter(status="active").values("tenant_id").annotate(n=Count("id")).order_by()
    return {row["tenant_id"]: row["n"] for row in rows}


def existing(model=None) -> dict[int, bool]:
    """The tenant indexes on the table: tenant id -> valid (a failed concurrent build leaves an invalid one)."""
    table = _model(model)._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                       "JOIN pg_class t ON t.oid = i.indrelid WHERE t.relname = %s AND c.relname LIKE %s",
                       [table, PREFIX.replace("_", r"\_") + "%"])
        found = cursor.fetchall()
    return {int(m.group(1)): bool(valid) for name, valid in found if (m := _NAME.match(name))}


def maintain(min_rows: int | None = None, *, model=None, dry_run: bool = False) -> Maintenance:
    """Create, rebuild and drop tenant indexes so they match the active-entry counts (see the module)."""
    min_rows = settings.SEMANTIC_TENANT_INDEX_MIN_ROWS if min_rows is None else int(min_rows)
    if min_rows < 1:
        raise ValueError(f"min_rows must be at least 1, not {min_rows}")
    model = _model(model)
    result = Maintenance(min_rows, counts=active_counts(model))
    have = existing(model)
    drop_below = max(1, min_rows // 2)
    for tenant_id, valid in sorted(have.items()):
        n = result.counts.get(tenant_id, 0)
        if n < drop_below:
            result.dropped.append(tenant_id)
        elif not valid:
            result.rebuilt.append(tenant_id)
        else:
            result.kept.append(tenant_id)
    result.created = sorted(t for t, n in result.counts.items() if n >= min_rows and t not in have)
    if dry_run:
        return result
    concurrently = not connection.in_atomic_block
    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 0")  # a large tenant's build takes longer than a request may
        if not concurrently:  # in a transaction that wrote rows: their deferred checks run before the DDL
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    try:
        with connection.schema_editor(atomic=False) as editor:
            for tenant_id in result.dropped + result.rebuilt:
                editor.remove_index(model, tenant_index(tenant_id), concurrently=concurrently)
            for tenant_id in sorted(result.rebuilt + result.created):
                editor.add_index(model, tenant_index(tenant_id), concurrently=concurrently)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET statement_timeout")
            if not concurrently:
                cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    return result


def run_job(*, task_id: str = "", attempt: int = 1):
    """``maintain`` as a recorded job (a Job run in the admin), one run at a time."""
    with job_run("semantic_tenant_indexes", task_id=task_id, attempt=attempt) as ctx:
        result = maintain()
        ctx.record(changed=len(result.created) + len(result.rebuilt), removed=len(result.dropped))
        ctx.run.detail.update(result.as_detail())
    return ctx.run
