"""Operations the apps' migrations share. Historical migrations import them: change them only in ways
that keep every migration using them correct."""
from __future__ import annotations

from django.db import migrations


def content_types_relabel(moved: dict[str, tuple[str, ...]], app: str) -> migrations.RunPython:
    """Relabel the content types of models that moved to ``app`` without moving data (``moved``: the
    old app label -> its model names), keeping their ids, so permissions, group grants and admin log
    entries follow the models. Reversible."""

    def relabel(apps, schema_editor, forward: bool) -> None:
        content_type = apps.get_model("contenttypes", "ContentType")
        db = schema_editor.connection.alias
        for old, models_ in moved.items():
            source, target = (old, app) if forward else (app, old)
            for model in models_:
                content_type.objects.using(db).filter(app_label=target, model=model).delete()  # none unless re-run
                content_type.objects.using(db).filter(app_label=source, model=model).update(app_label=target)

    return migrations.RunPython(lambda apps, editor: relabel(apps, editor, True),
                                lambda apps, editor: relabel(apps, editor, False))
