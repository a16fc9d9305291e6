#!/usr/bin/env node
// `npm test`: the workerd suite, then the Node-side suite. For each it prints what it runs, vitest's line per
// test file, and how long it took; at the end, both verdicts and times. Both suites run even when the first
// fails, so one run tells everything. The worker's request log and its info and warn events stay hidden
// (vitest.config.ts); TEST_LOGS=1 npm test shows them. Arguments after `--` go to both suites (a file or a
// name filter: `npm test -- openapi`), and a suite with no test matching them passes.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const VITEST = fileURLToPath(new URL("../node_modules/vitest/vitest.mjs", import.meta.url));

const SUITES = [
  {
    name: "workerd",
    runs: "test/*.test.ts inside workerd on the real local D1, twice: project single (one database) and shards (two)",
    args: ["run"],
  },
  {
    name: "node",
    runs:
      "test-node/*.test.ts in Node against a served worker: the OpenAPI document, /docs in Chromium, the real " +
      "gpodder clients, the client package, the docs' examples and links, npm run admin, backups, shards:move",
    args: ["run", "-c", "vitest.node.config.ts"],
  },
];

const seconds = (ms) => `${(ms / 1000).toFixed(0)} s`;

const extra = process.argv.slice(2);
const results = [];
for (const suite of SUITES) {
  console.log(`\n== ${suite.name} suite: ${suite.runs}\n`);
  const started = Date.now();
  const args = [VITEST, ...suite.args, ...(extra.length > 0 ? ["--passWithNoTests", ...extra] : [])];
  const run = spawnSync(process.execPath, args, { stdio: "inherit" });
  const result = { name: suite.name, status: run.status ?? 1, ms: Date.now() - started };
  results.push(result);
  console.log(`\n== ${suite.name} suite: ${result.status === 0 ? "passed" : "FAILED"} in ${seconds(result.ms)}`);
}
const total = results.reduce((sum, result) => sum + result.ms, 0);
console.log(
  `\n== npm test: ${results.map((r) => `${r.name} ${r.status === 0 ? "passed" : "FAILED"} (${seconds(r.ms)})`).join(", ")}; ${seconds(total)} in all`,
);
process.exit(results.every((result) => result.status === 0) ? 0 : 1);
