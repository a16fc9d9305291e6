import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  errorsInOutput,
  jsonObjects,
  readerDocuments,
  runnableCode,
  type ShellExample,
  shellExamples,
} from "./readme-examples";
import { type ServedWorker, serveWorker } from "./served-worker";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** The documents whose shell examples are run: the README, then every document of docs/. */
const DOCUMENTS = readerDocuments(ROOT);
/** The address the examples use; the test serves the worker elsewhere and rewrites it. */
const README_ORIGIN = "http://localhost:8787";

/**
 * The examples run scripts that open the worker's local database files (`npm run db:seed`, `admin`, `capacity`)
 * beside the served worker. Local D1 is SQLite: while another process (a script here, or admin.test.ts's and
 * backup.test.ts's, which run alongside on the shared worker) holds a file's lock, the worker's statement fails
 * SQLITE_BUSY and the request answers 503 "The database could not be reached" (Retry-After: 1), which a loaded
 * machine once turned into a failed run. Production D1 has no such second process. curl as the docs write it does
 * not retry, and neither does this test: it serves a worker of its own, whose files only its blocks open, one at a
 * time, as a reader's terminal would.
 */
let worker: ServedWorker;
beforeAll(async () => {
  worker = await serveWorker("docs-examples-secret-0123456789abcdef0123456789");
});
afterAll(async () => {
  await worker?.close();
});

interface BlockRun {
  example: ShellExample;
  stdout: string;
  stderr: string;
}

/**
 * Runs the blocks in one bash, in order (later blocks use the variables of earlier ones, as when pasted into
 * one terminal), with `set -eo pipefail`, and curl failing on HTTP errors unless a block expects errors. Each
 * block's output is cut out by a marker line, so a failure names its block. The shell works in a scratch
 * directory, so files the examples write (an OPML export, say) stay out of the checkout; `npm` runs the
 * repository's scripts there as it would from the repository's root. The scripts take the served worker's
 * secret (DEV_VARS_FILE) and local state (DEV_STATE_DIR) instead of the checkout's, and `API` is its address.
 * Nothing can be typed: stdin is closed, as in CI.
 */
async function runInOneShell(examples: ShellExample[]) {
  const { origin } = worker;
  const script = [
    "set -eo pipefail",
    `npm() { command npm --prefix ${JSON.stringify(ROOT)} "$@"; }`,
    ...examples.flatMap((example, index) => [
      `printf '\\n@@block ${index}@@\\n'; printf '\\n@@block ${index}@@\\n' >&2`,
      example.errorsExpected ? "unset -f curl" : 'curl() { command curl --fail-with-body "$@"; }',
      runnableCode(example).replaceAll(README_ORIGIN, origin),
    ]),
    "printf '\\n@@end@@\\n'",
  ].join("\n");
  const scratch = mkdtempSync(join(tmpdir(), "readme-examples-"));
  const env = {
    ...process.env,
    API: origin,
    DEV_VARS_FILE: worker.devVarsFile,
    DEV_STATE_DIR: worker.state,
    NO_COLOR: "1",
  };
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    const shell = execFile(
      "bash",
      ["-c", script],
      { cwd: scratch, timeout: 300_000, maxBuffer: 16 * 1024 * 1024, env },
      (error, out, err) => done({ code: error ? ((error.code as number) ?? 1) : 0, stdout: out, stderr: err }),
    );
    shell.stdin?.end();
  }).finally(() => rmSync(scratch, { recursive: true, force: true }));
  const split = (output: string) => output.split(/\n@@(?:block \d+|end)@@\n/).slice(1);
  const outs = split(stdout);
  const errs = split(stderr);
  const runs: BlockRun[] = examples.slice(0, outs.length).map((example, index) => ({
    example,
    stdout: outs[index] ?? "",
    stderr: errs[index] ?? "",
  }));
  return { code, finished: stdout.includes("\n@@end@@\n"), runs };
}

/** Runs a document's runnable blocks and fails on the first that fails, naming it; answers every block's output. */
async function runDocument(document: string, examples: ShellExample[]): Promise<BlockRun[]> {
  const { code, finished, runs } = await runInOneShell(examples);
  const where = (run: BlockRun) => `${document} line ${run.example.line}`;
  const last = runs.at(-1);
  expect(
    { code, finished },
    last
      ? `${where(last)} failed:\n${runnableCode(last.example)}\n--- stdout\n${last.stdout}\n--- stderr\n${last.stderr}`
      : "",
  ).toEqual({ code: 0, finished: true });
  for (const run of runs) {
    expect(run.stderr.trim(), `${where(run)} wrote to stderr`).toBe("");
    if (!run.example.errorsExpected) expect(errorsInOutput(run.stdout), `${where(run)} got errors`).toEqual([]);
  }
  return runs;
}

/** What the blocks of each document must have done besides succeeding (the answers that show it). */
const EFFECTS: Record<string, (runs: BlockRun[]) => void> = {
  "README.md": (runs) => {
    const output = runs.map((run) => run.stdout).join("\n");
    // The demo data is there, and the first request lists it.
    expect(output).toContain('Demo data for "dev-user" is in the local D1 database DB');
    expect(output).toContain("https://feeds.npr.org/510289/podcast.xml");
  },
  "docs/app-developers.md": (runs) => {
    const output = runs.map((run) => run.stdout).join("\n");
    // The subscribe answered a resource, the bulk add two successes.
    expect(output).toContain('"type":"subscription"');
    expect(output).toMatch(/"meta":\{"succeeded":2,"failed":0\}/);
    // The sync from the token stored before the move reports the move.
    const later = runs.find((run) => run.example.code.includes("filter[since]=$SINCE"));
    const feeds = jsonObjects(later?.stdout ?? "").filter((document) => "meta" in document);
    expect(JSON.stringify(feeds.at(-1))).toContain("https://new-host.example.com/show.xml");
  },
  "docs/README-ops.md": (runs) => {
    const output = runs.map((run) => run.stdout).join("\n");
    expect(output).toContain("https://feeds.npr.org/510289/podcast.xml");
    expect(output).toMatch(
      /user "dev-user": bucket \d+ in DB \(local, top-level environment\)\n {2}gpodder username: /,
    );
    expect(output).toMatch(/subscriptions: 11 active, 12 stored with tombstones/);
    expect(output).toMatch(/DB: buckets 0-1023, size [\d ,]+ bytes/);
  },
};

for (const document of DOCUMENTS) {
  describe(`${document} shell examples`, () => {
    const examples = shellExamples(readFileSync(join(ROOT, document), "utf8"));
    const runnable = examples.filter((example) => example.skip === undefined);

    it("every skipped one says why", () => {
      for (const example of examples.filter((e) => e.skip !== undefined)) {
        expect(example.skip, `${document} line ${example.line}`).toMatch(/\w{3,}/);
      }
    });

    it.skipIf(runnable.length === 0)(
      "run as written against the worker: exit 0, nothing on stderr, no JSON:API error where success is expected",
      async () => {
        const runs = await runDocument(document, runnable);
        EFFECTS[document]?.(runs);
      },
    );
  });
}

describe("the documents' examples, all together", () => {
  it("the README has examples to run, curl among them, and each document with effects to check runs some", () => {
    const readme = shellExamples(readFileSync(join(ROOT, "README.md"), "utf8")).filter((e) => e.skip === undefined);
    expect(readme.length).toBeGreaterThan(0);
    expect(readme.some((example) => example.code.includes("curl"))).toBe(true);
    for (const document of Object.keys(EFFECTS)) {
      const examples = shellExamples(readFileSync(join(ROOT, document), "utf8"));
      expect(examples.filter((example) => example.skip === undefined).length, document).toBeGreaterThan(0);
    }
  });
});

describe("the example extraction", () => {
  const markdown = [
    "# Title",
    "```sh",
    "echo one",
    "```",
    "<!-- readme-test: skip (starts a server) -->",
    "```bash",
    "npm run dev",
    "```",
    "```json",
    '{"not": "shell"}',
    "```",
    "1. A step:",
    "",
    "   <!-- readme-test: errors expected -->",
    "   ```sh",
    "   curl -s x",
    "   ```",
    "<!-- readme-test: run with --local -->",
    "```sh",
    "npm run db:migrate:remote && npm run admin -- usage --remote --top 1",
    "```",
  ].join("\n");

  it("finds sh/bash blocks, in order, with their markers, indented ones included", () => {
    expect(shellExamples(markdown)).toEqual([
      { line: 2, code: "echo one", errorsExpected: false },
      { line: 6, code: "npm run dev", skip: "starts a server", errorsExpected: false },
      { line: 15, code: "curl -s x", errorsExpected: true },
      {
        line: 19,
        code: "npm run db:migrate:remote && npm run admin -- usage --remote --top 1",
        errorsExpected: false,
        local: true,
      },
    ]);
  });

  it("runs a `run with --local` block against the local databases", () => {
    const [example] = shellExamples(
      "<!-- readme-test: run with --local -->\n```sh\nnpm run db:migrate:remote\nnpm run admin -- user a --remote --env x\n```",
    );
    expect(runnableCode(example)).toBe("npm run db:migrate:local\nnpm run admin -- user a --local --env x");
    const [plain] = shellExamples("```sh\nnpm run admin -- user a --remote\n```");
    expect(runnableCode(plain)).toBe("npm run admin -- user a --remote");
  });

  it("refuses an unknown marker and a skip without a reason", () => {
    expect(() => shellExamples("<!-- readme-test: skp -->\n```sh\nx\n```")).toThrow(/unknown readme-test marker/);
    expect(() => shellExamples("<!-- readme-test: skip -->\n```sh\nx\n```")).toThrow(/unknown readme-test marker/);
  });

  it("spots JSON:API errors at the top level and inside bulk results, however the bodies are printed", () => {
    expect(errorsInOutput('{"data":{"id":"x"}}\n204\n')).toEqual([]);
    expect(errorsInOutput('{"errors":[{"status":"401"}]}')).toHaveLength(1);
    expect(errorsInOutput('{"atomic:results":[{"data":{}},{"errors":[{"status":"409"}]}]}')).toHaveLength(1);
    // Bodies printed back to back, braces inside strings included.
    expect(errorsInOutput('{"data":{"id":"}{"}}{"errors":[{"status":"404"}]}200')).toHaveLength(1);
  });
});
