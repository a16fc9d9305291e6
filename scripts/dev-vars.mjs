// The git-ignored .dev.vars holds the local dev secret that `wrangler dev` loads. DEV_VARS_FILE names another
// file instead (`npm run dev` then hands it to `wrangler dev --env-file`): the docs test (test-node/readme.test.ts)
// points `npm run token` at the secret of the worker it serves, without touching the checkout's .dev.vars.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

export const DEV_VARS = process.env.DEV_VARS_FILE
  ? pathToFileURL(resolve(process.env.DEV_VARS_FILE))
  : new URL("../.dev.vars", import.meta.url);

export function readDevSecret() {
  if (!existsSync(DEV_VARS)) return undefined;
  const line = readFileSync(DEV_VARS, "utf8")
    .split("\n")
    .find((l) => l.startsWith("AUTH_JWT_SECRET="));
  return line?.slice("AUTH_JWT_SECRET=".length).trim().replace(/^"|"$/g, "") || undefined;
}

/** Creates .dev.vars with a random secret on first run; keeps an existing one. */
export function ensureDevSecret() {
  const existing = readDevSecret();
  if (existing) return { secret: existing, created: false };
  const secret = randomBytes(32).toString("hex");
  const before = existsSync(DEV_VARS) ? readFileSync(DEV_VARS, "utf8") : "";
  const separator = before === "" || before.endsWith("\n") ? "" : "\n";
  writeFileSync(
    DEV_VARS,
    `${before}${separator}# Local dev only (git-ignored). Tokens: npm run token -- <userId>\nAUTH_JWT_SECRET="${secret}"\n`,
  );
  return { secret, created: true };
}

/** The value of `name` in .dev.vars, if set. */
export function readDevVar(name) {
  if (!existsSync(DEV_VARS)) return undefined;
  const line = readFileSync(DEV_VARS, "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${name}=`));
  return (
    line
      ?.slice(name.length + 1)
      .trim()
      .replace(/^"|"$/g, "") || undefined
  );
}

/** Sets `name` in .dev.vars (replacing its line, or appending one), keeping everything else. */
export function setDevVar(name, value) {
  const before = existsSync(DEV_VARS) ? readFileSync(DEV_VARS, "utf8") : "";
  const line = `${name}="${value}"`;
  const lines = before.split("\n");
  const at = lines.findIndex((l) => l.startsWith(`${name}=`));
  if (at >= 0) lines[at] = line;
  else {
    if (lines.at(-1) === "") lines.pop();
    lines.push(line, "");
  }
  writeFileSync(DEV_VARS, lines.join("\n"));
}
