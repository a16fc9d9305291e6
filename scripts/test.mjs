#!/usr/bin/env node
// `npm test`: the workerd suite, then the Node-side suite. For each it prints what it runs, vitest's line per
// test file (a failing file in full, with its tests, assertions and logs; a passing file's logs stay hidden), and
// how long it took; at the end, both verdicts and times, then every failure again (project, file, test and
// assertion), so that the last thing on the screen is what broke. Both suites run even when the first fails, so
// one run tells everything. The worker's request log and its info and warn events stay hidden
// (vitest.config.ts); TEST_LOGS=1 npm test shows them, and the passing files' logs too. Arguments after `--` go
// to both suites (a file or a name filter: `npm test -- openapi`), and a suite with no test matching them passes.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { stripVTControlCharacters } from "node:util";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const VITEST = join(ROOT, "node_modules/vitest/vitest.mjs");
const FAILURES_REPORTER = join(ROOT, "scripts/test-failures-reporter.mjs");

const SUITES = [
  {
    name: "workerd",
    runs:
      "test/*.test.ts inside workerd on the real local D1, files side by side: project single (one database), " +
      "and shards (two) for the files that depend on where a user's database is",
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

/** How much of an assertion's message the closing summary repeats (the full text is above, with the file). */
const MESSAGE_LINES = 12;

const seconds = (ms) => `${(ms / 1000).toFixed(0)} s`;
const quiet = process.env.TEST_LOGS !== "1";

/** The failures scripts/test-failures-reporter.mjs wrote; null when vitest stopped before (its output says why). */
function failuresIn(reportFile) {
  try {
    return JSON.parse(readFileSync(reportFile, "utf8"));
  } catch {
    return null;
  }
}

function shortMessage(message) {
  // vitest's messages may carry terminal colours
  const lines = stripVTControlCharacters(message).trimEnd().split("\n");
  const kept = lines.slice(0, MESSAGE_LINES).map((line) => `      ${line}`);
  if (lines.length > MESSAGE_LINES)
    kept.push(`      ... (${lines.length - MESSAGE_LINES} more lines above, with the file)`);
  return kept.join("\n");
}

const extra = process.argv.slice(2);
const scratch = mkdtempSync(join(tmpdir(), "npm-test-"));
const results = [];
for (const suite of SUITES) {
  console.log(`\n== ${suite.name} suite: ${suite.runs}\n`);
  const started = Date.now();
  const reportFile = join(scratch, `${suite.name}.json`);
  const args = [
    VITEST,
    ...suite.args,
    // default: one line per file, and a failing file in full; the failures reporter: them again, for the end
    "--reporter=default",
    `--reporter=${FAILURES_REPORTER}`,
    ...(quiet ? ["--silent=passed-only"] : []),
    // A passing file is one line, its slow tests unlisted (the bench measures speed, not the tests).
    "--slowTestThreshold=600000",
    ...(extra.length > 0 ? ["--passWithNoTests", ...extra] : []),
  ];
  const run = spawnSync(process.execPath, args, {
    stdio: "inherit",
    cwd: ROOT,
    env: { ...process.env, NPM_TEST_FAILURES: reportFile },
  });
  const result = {
    name: suite.name,
    status: run.status ?? 1,
    ms: Date.now() - started,
    failures: failuresIn(reportFile),
  };
  results.push(result);
  console.log(`\n== ${suite.name} suite: ${result.status === 0 ? "passed" : "FAILED"} in ${seconds(result.ms)}`);
}
rmSync(scratch, { recursive: true, force: true });

const total = results.reduce((sum, result) => sum + result.ms, 0);
console.log(
  `\n== npm test: ${results.map((r) => `${r.name} ${r.status === 0 ? "passed" : "FAILED"} (${seconds(r.ms)})`).join(", ")}; ${seconds(total)} in all`,
);
for (const result of results.filter((r) => r.status !== 0)) {
  if (result.failures === null || result.failures.length === 0) {
    console.log(`\n== ${result.name} suite FAILED without a failed test: see its output above (a setup, a crash).`);
    continue;
  }
  console.log(`\n== ${result.name} suite: ${result.failures.length} failed`);
  for (const failure of result.failures) {
    const project = failure.project ? `[${failure.project}] ` : "";
    console.log(`\n  ✗ ${project}${failure.file} > ${failure.test}\n${shortMessage(failure.error)}`);
  }
}
process.exit(results.every((result) => result.status === 0) ? 0 : 1);
