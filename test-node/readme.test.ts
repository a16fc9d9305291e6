import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, inject, it } from "vitest";
import { errorsInOutput, type ShellExample, shellExamples } from "./readme-examples";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const README = readFileSync(`${ROOT}README.md`, "utf8");
/** The address the README's examples use; the test serves the worker elsewhere and rewrites it. */
const README_ORIGIN = "http://localhost:8787";

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
 * repository's scripts there as it would from the repository's root.
 */
async function runInOneShell(examples: ShellExample[]) {
  const origin = inject("workerOrigin");
  const script = [
    "set -eo pipefail",
    `npm() { command npm --prefix ${JSON.stringify(ROOT)} "$@"; }`,
    ...examples.flatMap((example, index) => [
      `printf '\\n@@block ${index}@@\\n'; printf '\\n@@block ${index}@@\\n' >&2`,
      example.errorsExpected ? "unset -f curl" : 'curl() { command curl --fail-with-body "$@"; }',
      example.code.replaceAll(README_ORIGIN, origin),
    ]),
    "printf '\\n@@end@@\\n'",
  ].join("\n");
  const scratch = mkdtempSync(join(tmpdir(), "readme-examples-"));
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(
      "bash",
      ["-c", script],
      {
        cwd: scratch,
        timeout: 180_000,
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, DEV_VARS_FILE: inject("devVarsFile"), NO_COLOR: "1" },
      },
      (error, out, err) => done({ code: error ? ((error.code as number) ?? 1) : 0, stdout: out, stderr: err }),
    );
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

describe("README.md shell examples", () => {
  const examples = shellExamples(README);
  const runnable = examples.filter((example) => example.skip === undefined);

  it("has examples to run, and every skipped one says why", () => {
    expect(runnable.length).toBeGreaterThanOrEqual(2);
    expect(runnable.some((example) => example.code.includes("curl"))).toBe(true);
    for (const example of examples.filter((e) => e.skip !== undefined)) {
      expect(example.skip, `README line ${example.line}`).toMatch(/\w{3,}/);
    }
  });

  it("run as written against the worker: exit 0, nothing on stderr, no JSON:API error where success is expected", async () => {
    const { code, finished, runs } = await runInOneShell(runnable);
    const where = (run: BlockRun) => `README line ${run.example.line}`;
    const last = runs.at(-1);
    expect(
      { code, finished },
      last
        ? `${where(last)} failed:\n${last.example.code}\n--- stdout\n${last.stdout}\n--- stderr\n${last.stderr}`
        : "",
    ).toEqual({ code: 0, finished: true });
    for (const run of runs) {
      expect(run.stderr.trim(), `${where(run)} wrote to stderr`).toBe("");
      if (!run.example.errorsExpected) expect(errorsInOutput(run.stdout), `${where(run)} got errors`).toEqual([]);
    }
    // The examples did what they say: the subscribe answered a resource, the bulk add two successes.
    const output = runs.map((run) => run.stdout).join("\n");
    expect(output).toContain('"type":"subscription"');
    expect(output).toMatch(/"meta":\{"succeeded":2,"failed":0\}/);
  });
});

describe("the README example extraction", () => {
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
  ].join("\n");

  it("finds sh/bash blocks, in order, with their markers, indented ones included", () => {
    expect(shellExamples(markdown)).toEqual([
      { line: 2, code: "echo one", errorsExpected: false },
      { line: 6, code: "npm run dev", skip: "starts a server", errorsExpected: false },
      { line: 15, code: "curl -s x", errorsExpected: true },
    ]);
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
