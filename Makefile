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

test: deps
	@bash scripts/test-services.sh
	@mkdir -p var
	@set -o pipefail; npx tap 2>&1 | tee var/test-output.txt; status=$$?; \
	  node scripts/test-summary.mjs var/test-output.txt; exit $$status

# Each benchmark prints its figures, one line per measure. They need wrk and sipp (installed here).
bench: build
	@bash scripts/test-services.sh
	@command -v wrk >/dev/null || apt-get install -y -q wrk >/dev/null
	@for f in $$(ls bench/*/*.bench.ts); do echo "== $$f"; node --import tsx $$f || exit 1; done

clean:
	rm -rf dist .tap
