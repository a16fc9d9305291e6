import { readdirSync } from "node:fs";
import { join } from "node:path";
/**
 * The shell examples of the README and docs/*.md, as a reader would paste them: every fenced block whose info
 * string is `sh`, `bash` or `shell`, in document order. An HTML comment on the line before the fence changes how
 * the docs test treats the block:
 *   <!-- readme-test: skip (reason) -->      not run (it starts a server, needs Cloudflare...); the reason is
 *                                           required
 *   <!-- readme-test: errors expected -->   run, but its answers may be JSON:API errors or HTTP errors
 *   <!-- readme-test: run with --local -->  run against the local databases instead of Cloudflare's: `--remote`
 *                                           becomes `--local`, `npm run db:migrate:remote` `db:migrate:local`
 * Anything else is run: a new example in any section is tested without further ado.
 */

/** The documents a reader follows, repository-relative: the README, then every document of docs/. */
export function readerDocuments(root: string): string[] {
  return [
    "README.md",
    ...readdirSync(join(root, "docs"))
      .filter((name) => name.endsWith(".md"))
      .sort()
      .map((name) => `docs/${name}`),
  ];
}
export interface ShellExample {
  /** 1-based line of the opening fence. */
  line: number;
  code: string;
  /** Why the block is not run; undefined when it is. */
  skip?: string;
  errorsExpected: boolean;
  /** Written for Cloudflare, run with `--local` (see above). */
  local?: boolean;
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/;
const SHELL = new Set(["sh", "bash", "shell"]);
const MARKER = /^\s*<!--\s*readme-test:\s*(.*?)\s*-->\s*$/;

function marker(
  previousLine: string | undefined,
  line: number,
): Pick<ShellExample, "skip" | "errorsExpected" | "local"> {
  const match = previousLine?.match(MARKER);
  if (!match) return { errorsExpected: false };
  const directive = match[1];
  if (directive === "errors expected") return { errorsExpected: true };
  if (directive === "run with --local") return { errorsExpected: false, local: true };
  const skip = directive.match(/^skip\s*\((.+)\)$/);
  if (skip) return { skip: skip[1].trim(), errorsExpected: false };
  throw new Error(`README line ${line - 1}: unknown readme-test marker "${directive}"`);
}

/** The block as the test runs it: a `run with --local` block's Cloudflare flags and scripts made local ones. */
export function runnableCode(example: ShellExample): string {
  if (!example.local) return example.code;
  return example.code
    .replaceAll(/(?<=\s)--remote\b/g, "--local")
    .replaceAll(/\bdb:migrate:remote\b/g, "db:migrate:local");
}

export function shellExamples(markdown: string): ShellExample[] {
  const lines = markdown.split("\n");
  const examples: ShellExample[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(FENCE);
    if (!open) continue;
    const [, indent, fence, language] = open;
    let end = i + 1;
    while (end < lines.length && !lines[end].trimStart().startsWith(fence)) end++;
    if (SHELL.has(language.toLowerCase())) {
      const code = lines
        .slice(i + 1, end)
        .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line))
        .join("\n");
      examples.push({ line: i + 1, code, ...marker(lines[i - 1], i + 1) });
    }
    i = end;
  }
  return examples;
}

/**
 * The JSON objects in a block's standard output, whether each is on its own line or printed back to back
 * (curl adds no newline after a body): a scan for balanced braces outside strings.
 */
export function jsonObjects(output: string): Record<string, unknown>[] {
  const objects: Record<string, unknown>[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < output.length; i++) {
    const ch = output[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"' && depth > 0) {
      inString = true;
    } else if (ch === "{") {
      if (depth++ === 0) start = i;
    } else if (ch === "}" && depth > 0 && --depth === 0) {
      try {
        objects.push(JSON.parse(output.slice(start, i + 1)));
      } catch {
        // Not JSON after all (a brace in plain text): skip it.
      }
    }
  }
  return objects;
}

/** What in a block's standard output shows a failed request: JSON:API errors, at the top or inside results. */
export function errorsInOutput(stdout: string): string[] {
  return jsonObjects(stdout).flatMap((document) => {
    const results = Array.isArray(document["atomic:results"]) ? document["atomic:results"] : [];
    const failedResults = results.filter((result) => result && typeof result === "object" && "errors" in result);
    return "errors" in document || failedResults.length > 0 ? [JSON.stringify(document)] : [];
  });
}
