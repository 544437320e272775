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

# ESLint, then scripts/check-cycles.mjs: any import cycle in src/ (type-only imports included) fails.
lint: deps
	npm run lint

typecheck: deps
	npm run typecheck

# The tests run from a transpiled copy of the tree in which each test file is bundled with what it
# imports (scripts/build-tests.mjs: one file to load instead of ~3,100), a few files at a time,
# slowest first (scripts/run-tests.mjs; TEST_JOBS=N to change how many). Test files that fail are
# run once more (timing on a loaded 2-core machine), with source-mapped stacks. The closing lines name every file that failed on its first
# run ("flaky: ..."), whatever the re-run did: each is a defect. The last line, "N passed, N
# failed", counts the first run's passes and what still fails.
test: deps
	@bash scripts/test-services.sh
	@node scripts/build-tests.mjs
	@mkdir -p var && rm -f var/tap-failed.txt var/test-first-failed.txt var/test-rerun.txt
	@node scripts/run-tests.mjs --save=var/tap-failed.txt --out=var/test-output.txt; status=$$?; \
	  if [ -s var/tap-failed.txt ]; then cp var/tap-failed.txt var/test-first-failed.txt; fi; \
	  if [ $$status -ne 0 ] && [ -s var/tap-failed.txt ]; then \
	    echo "re-running once: $$(tr '\n' ' ' < var/tap-failed.txt)"; \
	    node scripts/run-tests.mjs --source-maps --save=var/tap-failed.txt --out=var/test-rerun.txt $$(cat var/tap-failed.txt); status=$$?; \
	    node scripts/test-summary.mjs var/test-output.txt var/test-first-failed.txt var/test-rerun.txt var/tap-failed.txt; \
	  else \
	    node scripts/test-summary.mjs var/test-output.txt var/test-first-failed.txt; \
	  fi; exit $$status

# Each benchmark prints its figures, one line per measure. What they need beyond the tests'
# services (wrk, sipp, Kamailio as the SIP anchor) is listed in bench/apt-packages.txt.
bench: build
	@bash scripts/test-services.sh
	@missing=$$(grep -v '^\s*\(#\|$$\)' bench/apt-packages.txt | while read -r p; do \
	    dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' || echo "$$p"; done); \
	  if [ -n "$$missing" ]; then echo "installing Debian packages: $$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null || exit 1; fi
	@for f in $$(ls bench/*/*.bench.ts); do echo "== $$f"; node --import tsx $$f || exit 1; done

clean:
	rm -rf dist .tap
