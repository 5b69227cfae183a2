# Every command a person needs. `make demo` and `make test` set themselves up.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PG_URL ?= postgres://postgres@127.0.0.1:5432/bench
export DJANGO_SETTINGS_MODULE := config.settings

.PHONY: setup tools venv services demo test test-fast test-load lint schema check-schema clean bench-accuracy bench messages gpu-check

setup: tools venv

# Debian packages the probes and tests use; installed when run as root and missing.
tools:
	@missing=""; \
	for pair in iperf3:iperf3 fio:fio ping:iputils-ping ip:iproute2 tracepath:iputils-tracepath \
	            traceroute:traceroute redis-server:redis-server pg_isready:postgresql-client \
	            chromium:chromium nice:coreutils wrk:wrk docker-compose:docker-compose tmux:tmux; do \
	  cmd=$${pair%%:*}; pkg=$${pair##*:}; \
	  command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$pkg"; \
	done; \
	fc-list :lang=zh 2>/dev/null | grep -q . || missing="$$missing fonts-wqy-zenhei"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 \
	  || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "missing tools:$$missing (run 'make tools' as root, or apt-get install them)"; exit 1; \
	  fi; \
	fi

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e . || $(PY) -m pip install -q --no-deps -e .
	touch $@

# PostgreSQL and Redis of this machine: started when they are down.
services:
	@pg_isready -q -h 127.0.0.1 || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start
	@redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 || redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
	@for i in $$(seq 1 30); do pg_isready -q -h 127.0.0.1 && break; sleep 1; done

demo: setup
	$(PY) -m lab.demo

# The 60 slowest tests are printed with every run: where the suite's time goes is visible.
PYTEST_RUN = DB_CONN_MAX_AGE=0 $(VENV)/bin/pytest -q --durations=60
PYTEST = DATABASE_URL=$${DATABASE_URL:-$(PG_URL)} $(PYTEST_RUN)
# Test processes of the parallel part (pytest-xdist); each has its own database, Redis and
# live server. The tests that measure or check the whole machine run alone after it.
TEST_WORKERS ?= 2

# The `beside` tests (the demo's, then the quick full suite's) run during the parallel part,
# one after the other in a process of their own, on a database of its own; their output is
# kept and shown after it, and the make fails when either part does. One process, not two:
# with two labs beside the two test processes, a loopback RTT took 28 ms and the
# certification tests that bound it failed.
BESIDE_LOG = var/test-output/beside.log
BESIDE = DATABASE_URL=$${DATABASE_URL:-$(PG_URL)}_beside $(PYTEST_RUN)

test: setup services
	@mkdir -p $(dir $(BESIDE_LOG)); \
	$(BESIDE) -m "beside and not load" > $(BESIDE_LOG) 2>&1 & beside=$$!; \
	$(PYTEST) -n $(TEST_WORKERS) -m "not load and not serial and not beside"; parallel=$$?; \
	wait $$beside; besides=$$?; echo "--- beside the parallel part ($(BESIDE_LOG)):"; \
	tail -n 60 $(BESIDE_LOG); test $$parallel -eq 0 && test $$besides -eq 0
	$(PYTEST) -m "serial and not load and not beside"

test-fast: venv
	$(PYTEST) -n $(TEST_WORKERS) -m "not slow and not serial and not beside"
	$(PYTEST) -m "serial and not slow and not beside"

# The load test (twenty workers, a thousand runs) on its own: CI runs it after `make test`.
test-load: setup services
	$(PYTEST) -m load

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy .
	$(PY) manage.py check
	$(PY) manage.py makemigrations --check --dry-run
	$(MAKE) check-schema

# The web pages' Simplified Chinese catalogue: extract the marked strings (templates, gettext,
# gettext_noop in contract/, board/ and web/), translate the new ones in the .po, compile.
messages: venv
	$(PY) manage.py makemessages -l zh_Hans --no-obsolete --ignore='.venv/*' --ignore='var/*' \
	    --ignore='tests/*' --ignore='perf/*' --ignore='lab/*' --ignore='workers/*'
	msgfmt --check-format -o locale/zh_Hans/LC_MESSAGES/django.mo locale/zh_Hans/LC_MESSAGES/django.po
	# benchctl's own catalogue: every module that takes _() from workers.i18n, and the
	# estimate outcomes' wording it shares with the platform (contract/outcomes.py), and the
	# metrics' labels and areas (contract/metrics.py, contract/areas.py), whose Chinese is the
	# pages' own: a new label takes django.po's translation before you write one.
	cd workers && xgettext -L Python -k_ -kgettext_noop --from-code=UTF-8 --add-location=file \
	    -o /tmp/benchctl.pot ../contract/outcomes.py $$(cd .. && grep -rl 'from workers.i18n import' workers lab \
	    | sort | sed 's|^workers/||; s|^lab/|../lab/|') ../contract/metrics.py ../contract/areas.py ../contract/places.py
	msgmerge -q -U --backup=none workers/locale/zh_Hans/LC_MESSAGES/benchctl.po /tmp/benchctl.pot
	msgfmt -c -o workers/locale/zh_Hans/LC_MESSAGES/benchctl.mo workers/locale/zh_Hans/LC_MESSAGES/benchctl.po

schema: venv
	$(PY) manage.py spectacular --file api/openapi.yaml --validate

# The committed OpenAPI schema must match the code: every API change shows in review.
check-schema: venv
	$(PY) manage.py spectacular --file /tmp/openapi.check.yaml --validate
	diff -u api/openapi.yaml /tmp/openapi.check.yaml

clean:
	rm -rf $(VENV) var staticfiles

# The lab (root): shaped links in namespaces; does the platform store what we shaped?
bench-accuracy: setup
	$(PY) -m perf.accuracy

# The platform against bare Celery and a minimal Django app, in one run (figures, not tests);
# then the reference agent over a log of a million records against reading it whole.
bench: setup services
	$(PY) -m perf.run
	$(PY) -m perf.reference_log

# Every GPU path of the suite on this host (NVML, matmul, memory, PCIe copies, NCCL, DDP), each
# figure beside its GPU model's published one, in under five minutes; without a GPU it says so.
# GPU_CHECK_ARGS="--json FILE" also writes everything it measured.
gpu-check: venv
	$(PY) -m benchmarks.gpu_check $(GPU_CHECK_ARGS)
