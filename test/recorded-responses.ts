import { afterAll } from "vitest";
import document from "../public/openapi.json";
import app from "../src/index";
import { checkExchange, type Exchange } from "./openapi-check";

/**
 * Every response the suite's requests receive, checked against the OpenAPI document (./openapi-check.ts).
 * `send()` in ./helpers.ts and the typed client's test fetch record each exchange; after each test file
 * (this module is a setup file, so the hook runs per file) the recorded ones are validated, and the file
 * fails with one message per problem naming the operation, the status and what to add where. So an
 * endpoint added later is covered by its own tests the moment they call it, documented or not.
 */

interface Recorded {
  method: string;
  url: string;
  status: number;
  headers: Headers;
  /** A clone, read only after the file's tests: the test reads the original as it likes. */
  response: Response;
}

const recorded: Recorded[] = [];

export function recordExchange(request: Request, response: Response): void {
  recorded.push({
    method: request.method,
    url: request.url,
    status: response.status,
    headers: new Headers(response.headers),
    response: response.clone(),
  });
}

/** The problems of every recorded exchange, each problem once (with how often it happened). */
export async function recordedProblems(): Promise<string[]> {
  const seen = new Set<string>();
  const problems = new Map<string, { message: string; count: number }>();
  const exchanges = recorded.splice(0);
  for (const { response, ...rest } of exchanges) {
    const exchange: Exchange = { ...rest, body: await response.text() };
    const key = `${exchange.method} ${exchange.url} ${exchange.status} ${exchange.headers.get("Content-Type")} ${exchange.body}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const problem = checkExchange(document, app.routes, exchange);
    if (problem === undefined) continue;
    const firstLine = problem.split("\n")[0];
    const known = problems.get(firstLine);
    if (known) known.count++;
    else problems.set(firstLine, { message: problem, count: 1 });
  }
  return [...problems.values()].map(({ message, count }) =>
    count > 1 ? `${message}\n  (${count} responses)` : message,
  );
}

afterAll(async () => {
  const problems = await recordedProblems();
  if (problems.length > 0) {
    throw new Error(
      `${problems.length} response(s) of this file's requests are not what public/openapi.json documents:\n\n${problems.join("\n\n")}`,
    );
  }
});
