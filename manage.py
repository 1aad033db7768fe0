#!/usr/bin/env python
import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")
    # deferred: Django's convention, imported once DJANGO_SETTINGS_MODULE is set
    from django.core.management import execute_from_command_line

    from supportbot.schema import ensure_migrated

    ensure_migrated(sys.argv)  # an unmigrated database: migrated (embedded) or one line saying what to run
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
