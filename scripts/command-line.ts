// What the operator commands (npm run admin, backup, restore, db:seed) share about their command line: a failure
// is one line on stderr and an exit status (2: the call's words are wrong; 1: the work failed), never a stack
// trace; a question is asked on stdin only when there is someone to answer it.
import { createInterface } from "node:readline";
import { type ParseArgsConfig, parseArgs } from "node:util";

/** Ends the command with `tool: message` on stderr and `status`. */
export function fail(tool: string, message: string, status: number): never {
  console.error(`${tool}: ${message}`);
  process.exit(status);
}

/** `parseArgs`, a bad option or value ending the command with the message and the usage (status 2). */
export function parseOrFail<T extends ParseArgsConfig>(tool: string, usage: string, config: T) {
  try {
    return parseArgs(config);
  } catch (err) {
    return fail(tool, `${(err as Error).message}\n${usage}`, 2);
  }
}

/** Asks on stdin; undefined when there is no answer to read (stdin closed, as under CI or `< /dev/null`). */
export function ask(question: string): Promise<string | undefined> {
  return new Promise((done) => {
    const lines = createInterface({ input: process.stdin, output: process.stderr });
    let answered = false;
    lines.on("close", () => {
      if (!answered) done(undefined);
    });
    lines.question(question, (answer) => {
      answered = true;
      lines.close();
      done(answer.trim());
    });
  });
}
