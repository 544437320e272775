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

bench: build
	@for f in $$(ls bench/*/*.bench.ts 2>/dev/null); do echo "== $$f"; npx tsx $$f || exit 1; done

clean:
	rm -rf dist .tap
