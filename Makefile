# svc-exchange: `make run` starts the daemon on its embedded defaults; `make test` installs
# what the tests need and runs them.
SHELL := /bin/bash
NODE_MODULES := node_modules/.package-lock.json

.PHONY: run build test lint typecheck bench clean deps

$(NODE_MODULES): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $(NODE_MODULES)

deps: $(NODE_MODULES)

build: deps
	npm run build

run: build
	node dist/src/bin/svc-exchanged.js $(ARGS)

lint: deps
	npm run lint

typecheck: deps
	npm run typecheck

# Test files that fail are run once more (timing on a loaded 2-core machine); the closing line
# counts the first run's passes and whatever still fails on the second.
test: deps
	@bash scripts/test-services.sh
	@mkdir -p var && rm -f var/tap-failed.txt var/test-rerun.txt
	@set -o pipefail; npx tap --save=var/tap-failed.txt 2>&1 | tee var/test-output.txt; status=$$?; \
	  if [ $$status -ne 0 ] && [ -s var/tap-failed.txt ]; then \
	    echo "re-running once: $$(tr '\n' ' ' < var/tap-failed.txt)"; \
	    npx tap --save=var/tap-failed.txt 2>&1 | tee var/test-rerun.txt; status=$$?; \
	  fi; \
	  node scripts/test-summary.mjs var/test-output.txt var/test-rerun.txt; exit $$status

# Each benchmark prints its figures, one line per measure. They need wrk and sipp (installed here).
bench: build
	@bash scripts/test-services.sh
	@command -v wrk >/dev/null || apt-get install -y -q wrk >/dev/null
	@for f in $$(ls bench/*/*.bench.ts); do echo "== $$f"; node --import tsx $$f || exit 1; done

clean:
	rm -rf dist .tap
