PY := .venv/bin/python
# The make targets are development: they ask for the public development secrets (supportbot/settings.py);
# any other process without DJANGO_SECRET_KEY, CACHE_SALT_SECRET and CUSTOMER_REF_SECRET refuses to start.
export ASK_DEV_SECRETS ?= 1

.PHONY: run test bench bootstrap migrate demo clean-var

## make run: install, start PostgreSQL/Redis (embedded unless DATABASE_URL/REDIS_URL are set),
## migrate, load the demo knowledge base, then run web + Celery worker + beat (+ the embedded model
## server when ASK_ANSWERER=model). A missing judge is built in the background (docs/first-run.md).
run: bootstrap
	$(PY) -m supportbot.run

## make test: same bootstrap with the embedded model, a browser and promtool (alert tests), then the whole pytest suite against
## the real services (the tests build their own small judge, tests/conftest.py).
test:
	BOOTSTRAP_BROWSER=1 BOOTSTRAP_LLAMA=1 BOOTSTRAP_PROMTOOL=1 bash scripts/bootstrap.sh
	$(PY) -m pytest

## make bench: every benchmark in bench/, then docs/benchmarks.md is rewritten.
bench: bootstrap
	$(PY) -m bench.all

bootstrap:
	bash scripts/bootstrap.sh

migrate: bootstrap
	$(PY) manage.py migrate

demo: migrate
	$(PY) manage.py load_demo

clean-var:
	rm -rf var/pg var/redis var/redis-broker var/run
